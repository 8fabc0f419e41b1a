#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet
# (apt-get, root or sudo). When all of them are installed already it does
# nothing, so neither root nor the network is needed on a second run.
# Usage: bash tools/apt-install.sh PACKAGE...
set -euo pipefail

missing=()
for pkg in "$@"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "apt-install: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "apt-get install ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
