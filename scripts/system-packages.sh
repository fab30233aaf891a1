#!/usr/bin/env bash
# Installs the Debian packages the tests use, once. Safe to run again: when all
# of them are installed it only asks dpkg (a few milliseconds) and exits.
#
#  * wordnet-base: METEOR's synonym stage in `reag spec eval` reads it offline;
#  * chromium, chromium-driver: the HTML report's tests render it headless,
#    offline (a screenshot, and a page driven through the driver);
#  * prometheus: promtool tests the alert rules (those tests fail rather than
#    skip without it), and a real Prometheus scrapes the stack.
#
# `make test` (and `make test-fast`) and `.ci/run` both run this script, so the
# README's test command sets the machine up alone; `make demo` needs none of them.
# Needs apt-get and root (or sudo without a password) only when something is
# missing. REAG_SKIP_SYSTEM_PACKAGES=1 skips it (those tests then skip or fail).
set -euo pipefail

PACKAGES=(wordnet-base chromium chromium-driver prometheus)

if [ "${REAG_SKIP_SYSTEM_PACKAGES:-0}" = "1" ]; then
  exit 0
fi

if ! command -v dpkg >/dev/null 2>&1; then
  echo "==> not a Debian system: install ${PACKAGES[*]} (or their equivalents) yourself;" \
    "without them the WordNet and Chromium tests skip and the promtool ones fail" >&2
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  # dpkg -s exits 0 for a package removed but not purged: read its status too.
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "missing Debian packages: ${missing[*]}; install them as root:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "==> Debian packages the tests use: installing ${missing[*]}"
${as_root[@]+"${as_root[@]}"} apt-get update -qq
${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
