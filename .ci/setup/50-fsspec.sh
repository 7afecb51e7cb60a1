# fsspec backend: the SFTP tests start Debian's OpenSSH sshd on a free loopback port, with their
# own config, host key and client key in a temp dir (agent_stores/testing/servers/sftp.py).
# Local and memory filesystems need nothing.
fsspec_had_sshd_package=""
dpkg -s openssh-server >/dev/null 2>&1 && fsspec_had_sshd_package=1
apt_install openssh-server openssh-client
# If this install just added the package and its maintainer script started the system's sshd on
# port 22, stop that service again: the tests start their own server and need no other.
if [ -z "$fsspec_had_sshd_package" ]; then
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet ssh 2>/dev/null; then
    systemctl stop ssh >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/ssh ] && /etc/init.d/ssh status >/dev/null 2>&1; then
    /etc/init.d/ssh stop >/dev/null 2>&1 || true
  fi
fi
unset fsspec_had_sshd_package
export AGENT_STORES_SSHD=/usr/sbin/sshd
export AGENT_STORES_REQUIRE="${AGENT_STORES_REQUIRE:+$AGENT_STORES_REQUIRE,}sftp"
