# Sourced by scripts/run and scripts/test: make .venv (Python 3.11+) and install a requirements
# file into it, again only when the requirements change.
set -euo pipefail

ensure_python() {
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Acme Pay needs Python 3.11 or newer as python3." >&2
    exit 1
  fi
}

create_venv() {
  python3 -m venv .venv 2>/dev/null && return 0
  rm -rf .venv
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's python3-venv (needed to create .venv)..." >&2
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv .venv && return 0
  fi
  echo "Could not create .venv: install python3-venv (apt-get install python3-venv)." >&2
  exit 1
}

ensure_venv() {
  local requirements=$1
  ensure_python
  if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    rm -rf .venv  # missing, or left half-made (no pip) by an interrupted setup
    create_venv
  fi
  local stamp
  stamp=".venv/.installed-$(cat requirements*.txt | sha256sum | cut -c1-16)-${requirements}"
  if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
    touch "$stamp"
  fi
}

# Browser tests drive Debian's Chromium; install it when missing and we may (root, apt-get).
# Without it the browser tests skip and say why.
ensure_browser() {
  command -v chromium >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's chromium for the browser tests..." >&2
    { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } ||
      echo "Could not install chromium; the browser tests will be skipped." >&2
  fi
}

# The nginx tests (tests/deployed/test_nginx_psp_mtls.py and test_web_tier.py) run Debian's
# nginx on ports of their own, in the foreground; install it when missing and we may
# (root, apt-get). Without it they skip and say why. (nginx is in /usr/sbin, often not in PATH.)
ensure_nginx() {
  if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
    return 0
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's nginx for the nginx tests..." >&2
    { apt-get update -qq && apt-get install -y -qq nginx >/dev/null; } ||
      echo "Could not install nginx; the nginx tests will be skipped." >&2
  fi
}
