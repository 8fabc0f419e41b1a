#!/usr/bin/env bash
# Runs the README's two commands in a clean Debian 12 (bookworm) chroot made
# with debootstrap from Debian's own packages: no Python packages, no npm, no
# compiler, nothing of this machine's. Prints the wall time of each command.
# Not part of .ci/run (the build from scratch alone takes longer than CI's
# budget allows); run it by hand, as root, on a Debian or Ubuntu machine:
#
#   bash tools/check-clean-debian.sh [CHROOT_DIR] [-- CTEST_ARGS...]
#
# CHROOT_DIR (default /var/tmp/llm2hef-clean-debian) is created with
# `debootstrap --variant=minbase bookworm` when it does not exist yet; this
# repository's tracked and untracked (not ignored) files are copied to /src
# in it. CTEST_ARGS go to tools/test.sh (e.g. -R install); none: every test.
# Network: the Debian mirror, PyPI and the npm registry (what the scripts fetch).
# CCACHE_DIR=DIR (optional): compile through ccache with that cache, mounted
# in the chroot, to shorten a repeated run; the compile times are then not a
# fresh machine's (the script says so).
# EXTRA_CA_CERTS="FILE.crt ..." (optional): behind a TLS-intercepting proxy,
# the proxy's CA certificates, trusted in the chroot (system store and pip).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
CHROOT=${1:-/var/tmp/llm2hef-clean-debian}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" -eq 0 ] || { echo "check-clean-debian: run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null

if [ ! -x "$CHROOT/bin/bash" ]; then
  start=$SECONDS
  debootstrap --variant=minbase bookworm "$CHROOT" "$MIRROR" >"$CHROOT.debootstrap.log" 2>&1 ||
    { tail -20 "$CHROOT.debootstrap.log"; echo "debootstrap into $CHROOT failed" >&2; exit 1; }
  echo "debootstrap: $((SECONDS - start)) s"
fi
# What a Debian 12 install's sources.list has: main, updates, security.
cat >"$CHROOT/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
SOURCES
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
if [ -n "${EXTRA_CA_CERTS:-}" ]; then
  # ca-certificates (installed by tools/install-test-deps.sh) adds these to
  # the system store; pip is told to use that store.
  mkdir -p "$CHROOT/usr/local/share/ca-certificates"
  for crt in $EXTRA_CA_CERTS; do cp "$crt" "$CHROOT/usr/local/share/ca-certificates/"; done
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$CHROOT/etc/pip.conf"
fi

mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || true; done; }
trap cleanup EXIT
CCACHE_ENV=""
if [ -n "${CCACHE_DIR:-}" ]; then
  mkdir -p "$CHROOT/ccache"
  mountpoint -q "$CHROOT/ccache" || { mount --bind "$CCACHE_DIR" "$CHROOT/ccache" && mounted+=("$CHROOT/ccache"); }
  CCACHE_ENV="CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
for m in proc sys dev dev/pts; do
  mountpoint -q "$CHROOT/$m" && continue
  case $m in proc) mount -t proc proc "$CHROOT/proc" ;; sys) mount -t sysfs sys "$CHROOT/sys" ;;
    *) mount --bind "/$m" "$CHROOT/$m" ;; esac
  mounted+=("$CHROOT/$m")
done

# The checkout as a fresh clone would have it (plus uncommitted changes), no build outputs.
rm -rf "$CHROOT/src" && mkdir -p "$CHROOT/src"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$CHROOT/src")

in_chroot() {
  # shellcheck disable=SC2086  # CCACHE_ENV is a list of NAME=VALUE words
  chroot "$CHROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 $CCACHE_ENV \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}
echo "clean: python3 $(in_chroot 'command -v python3 || echo absent'), npm $(in_chroot 'command -v npm || echo absent'), g++ $(in_chroot 'command -v g++ || echo absent')"
if [ -n "$CCACHE_ENV" ]; then
  echo "compiling through ccache ($CCACHE_DIR): build times below are not a fresh machine's"
  in_chroot "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ccache >/dev/null"
fi

TIMEFORMAT="%R s wall, %U s user, %S s system"
echo "== bash tools/quickstart.sh"
time in_chroot "cd /src && bash tools/quickstart.sh"
echo "== bash tools/test.sh $*"
time in_chroot "cd /src && bash tools/test.sh $(printf '%q ' "$@")"
