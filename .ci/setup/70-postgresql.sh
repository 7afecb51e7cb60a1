# shellcheck shell=bash
# PostgreSQL tests: Debian's server binaries, which the fixtures start as the unprivileged postgres
# user in a temp dir on a free loopback port (agent_stores/testing/servers/postgresql.py), and
# PgBouncer for the transaction-mode pooler runs. The machine's own server (5432) is never used.
postgresql_had_server_package=""
dpkg -s postgresql >/dev/null 2>&1 && postgresql_had_server_package=1
apt_install postgresql pgbouncer
# If this install just added the packages and their maintainer scripts started the system's
# cluster or PgBouncer, stop them again: the tests start their own servers and need no other.
if [ -z "$postgresql_had_server_package" ]; then
  for service in postgresql pgbouncer; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
      systemctl stop "$service" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$service" ] && "/etc/init.d/$service" status >/dev/null 2>&1; then
      "/etc/init.d/$service" stop >/dev/null 2>&1 || true
    fi
  done
fi
unset postgresql_had_server_package
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}postgresql,pgbouncer"
