# MongoDB for the real-server tests (sourced by .ci/run).
# No MongoDB server can be installed on our CI machines and no image can be pulled, so the tests
# run against the wire-protocol stand-in nx-27017 (PyPI, in the dev group that `uv sync` already
# installed), which the fixtures start on a free loopback port. It is NOT MongoDB; the test
# summary says so. A URL in AGENT_STORES_MONGODB_URL (a real server) would always win.
if ! uv run --no-sync nx-27017 --help >/dev/null 2>&1; then
  echo "nx-27017 is missing from the environment (it comes with the dev group)" >&2
  return 1
fi
# Never try to pull mongo:7 here: without a local image the container path is skipped at once.
export AGENT_STORES_NO_PULL=1
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}mongodb"
