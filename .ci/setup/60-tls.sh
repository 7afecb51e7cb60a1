# shellcheck shell=bash
# Encrypted-transport tests (tests/reliability/test_reliability_tls.py): redis-server serves TLS
# itself and moto's server takes a certificate; stunnel puts TLS in front of the MongoDB server
# (the stand-in speaks none) and in front of moto for client certificates.
apt_install stunnel4
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}tls"
