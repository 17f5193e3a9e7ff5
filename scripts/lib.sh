# Shared by the set-up scripts (sourced, not run).

# ensure_backports adds Debian's bookworm-backports suite if no source lists
# it, and says whether it did (0: added, so run apt-get update; 1: present).
ensure_backports() {
  if grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return 1
  fi
  echo "setup: adding Debian bookworm-backports"
  cat >/etc/apt/sources.list.d/bookworm-backports.sources <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  return 0
}
