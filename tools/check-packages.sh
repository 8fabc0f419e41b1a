#!/usr/bin/env bash
# Builds the Debian packages from an already-built tree, installs them with
# dpkg and uses them as a user and a third-party adapter author would:
#   llm2hef adapters        every first-party adapter loads from
#                           /usr/lib/llm2hef/adapters, nothing from a build tree
#   registry verify         the installed index matches the installed files
#   export                  the bundled tiny GPT-2 fixture, with no environment
#   examples/hello_adapter  configured with find_package(llm2hef_sdk) from
#                           /usr (llm2hef-dev), built, loaded, used by export
# Then removes what it installed. Root (dpkg). Used by .ci/run (about a minute);
# docs/install.md. Usage: bash tools/check-packages.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=$(cd "${1:-build}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-packages: run as root (dpkg -i)" >&2; exit 1; }
[ -f "$BUILD/CPackConfig.cmake" ] || { echo "check-packages: no $BUILD/CPackConfig.cmake (configure and build first)" >&2; exit 1; }

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# cpack's dependency list: dpkg-shlibdeps (dpkg-dev) on the files `file` finds to be ELF.
bash tools/apt-install.sh dpkg-dev file

for p in llm2hef llm2hef-dev; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ] ||
    fail "$p is installed already; this check installs and removes its own (dpkg -P $p first)"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/llm2hef-packages.XXXXXX")
installed=0
cleanup() {
  if [ "$installed" -eq 1 ]; then dpkg -P llm2hef-dev llm2hef >/dev/null || echo "warning: dpkg -P llm2hef-dev llm2hef failed" >&2; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

step "cpack in $BUILD"
rm -rf "$BUILD/packages"
cpack --config "$BUILD/CPackConfig.cmake" -B "$BUILD/packages" >"$TMP/cpack.log" 2>&1 || { cat "$TMP/cpack.log"; fail "cpack"; }
DEB=$(ls "$BUILD"/packages/llm2hef_*.deb) DEV=$(ls "$BUILD"/packages/llm2hef-dev_*.deb) || fail "cpack wrote no llm2hef_*.deb / llm2hef-dev_*.deb"
ls -l "$DEB" "$DEV"
dpkg-deb -f "$DEB" Package Version Architecture Depends

step "package fields: Maintainer, Recommends"
maintainer=$(dpkg-deb -f "$DEB" Maintainer)
[[ "$maintainer" =~ ^[^\<\>]+\ \<[^@\<\>\ ]+@[^@\<\>\ ]+\>$ ]] || fail "Maintainer '$maintainer' is not 'Name <address>'"
[ "$(dpkg-deb -f "$DEV" Maintainer)" = "$maintainer" ] || fail "the two packages name different maintainers"
case "$maintainer" in
  *@invalid\>) echo "warning: Maintainer is the placeholder '$maintainer'; set -DLLM2HEF_DEB_MAINTAINER before publishing" >&2 ;;
esac
[[ " $(dpkg-deb -f "$DEB" Recommends | tr ',' ' ') " == *" bash-completion "* ]] || fail "llm2hef does not recommend bash-completion"

step "dpkg -i"
installed=1
dpkg -i "$DEB" "$DEV" >"$TMP/dpkg.log" 2>&1 || { cat "$TMP/dpkg.log"; fail "dpkg -i $DEB $DEV"; }
LLM2HEF=/usr/bin/llm2hef
ADIR=/usr/lib/llm2hef/adapters
# Each package's file list in a file first: `dpkg -L P | grep -q X` under
# pipefail fails when grep stops at its first match while dpkg still writes
# (SIGPIPE), which made the copyright check fail on a package that had one.
dpkg -L llm2hef >"$TMP/llm2hef.list"
dpkg -L llm2hef-dev >"$TMP/llm2hef-dev.list"
grep -qx "$LLM2HEF" "$TMP/llm2hef.list" || fail "llm2hef does not own $LLM2HEF"
grep -q '/llm2hef_sdkConfig.cmake$' "$TMP/llm2hef-dev.list" || fail "llm2hef-dev has no llm2hef_sdkConfig.cmake"
if grep -q '/include/' "$TMP/llm2hef.list"; then fail "llm2hef ships headers (they are llm2hef-dev's)"; fi
for p in llm2hef llm2hef-dev; do
  grep -qx "/usr/share/doc/$p/copyright" "$TMP/$p.list" || fail "$p has no /usr/share/doc/$p/copyright"
done
# Stripped binaries (docs/install.md says why there is no -dbgsym package).
for f in "$LLM2HEF" /usr/lib/libllm2hef_sdk.so.* "$ADIR"/*.so; do
  [[ $(file -L "$f") == *", stripped"* ]] || fail "$f is not stripped: $(file -L "$f")"
done
# Man pages compressed (Debian policy 12.1), each a valid gzip stream.
pages=$(grep '^/usr/share/man/man1/.' "$TMP/llm2hef.list" || true)
[ -n "$pages" ] || fail "llm2hef ships no man pages"
for f in $pages; do
  case "$f" in *.1.gz) gzip -t "$f" || fail "$f is not a valid gzip file" ;; *) fail "man page not compressed: $f" ;; esac
done
# Every file of llm2hef-dev is named (itself or a folder above it) in
# docs/install.md's table row for llm2hef-dev.
row=$(grep '^| `llm2hef-dev` |' "$SRC/docs/install.md") || fail "docs/install.md has no llm2hef-dev row"
named=$(grep -o '`/usr/[^`]*`' <<<"$row" | tr -d '`')
while IFS= read -r f; do
  [ -d "$f" ] && continue
  ok=0
  for n in $named; do case "$f" in "$n"|"$n"*) [ "${n%/}" != "$n" ] || [ "$f" = "$n" ] && ok=1 ;; esac; done
  [ "$ok" -eq 1 ] || fail "llm2hef-dev's $f is not listed in docs/install.md"
done < <(dpkg -L llm2hef-dev)
[ "$(command -v llm2hef)" = "$LLM2HEF" ] || fail "llm2hef on PATH is $(command -v llm2hef || echo nothing), not $LLM2HEF"

# As a user: from an unrelated folder, no adapter path in the environment.
cd "$TMP"
run() { env -u LLM2HEF_ADAPTER_PATH HOME="$TMP/home" "$@"; }
mkdir -p "$TMP/home"

step "llm2hef adapters: every first-party adapter from $ADIR"
run llm2hef adapters
run llm2hef adapters --verbose --json >"$TMP/adapters.json"
roots=$(grep -c '"kind": "build tree"' "$TMP/adapters.json" || true)
[ "$roots" -eq 0 ] || fail "the packaged llm2hef searches a build tree ($TMP/adapters.json)"
n_installed=$(ls "$ADIR"/*.so | wc -l)
n_loaded=$(grep -c "\"file\": \"$ADIR/llm2hef_adapter_[a-z0-9_]*\\.so\"" "$TMP/adapters.json" || true)
# Each loaded adapter is listed twice (adapters and considered).
[ "$n_installed" -gt 0 ] && [ "$n_loaded" -ge "$n_installed" ] ||
  fail "$n_installed adapters installed in $ADIR, $n_loaded references to them in 'adapters --json'"
if grep -o '"file": "[^"]*"' "$TMP/adapters.json" | grep -v "\"$ADIR/" >/dev/null; then
  fail "adapters loaded from outside $ADIR: $(grep -o '"file": "[^"]*"' "$TMP/adapters.json" | grep -v "\"$ADIR/" | sort -u)"
fi

step "registry verify of the installed index"
run llm2hef registry verify "$ADIR/index.json" | tail -1

step "export the bundled tiny GPT-2 with the packaged llm2hef"
run llm2hef export "$SRC/tests/fixtures/gpt2-tiny" -o "$TMP/gpt2-tiny" --cache 64 --prefill 16 --gelu tanh --no-progress
for f in model.onnx compile.py manifest.json resources/hailo-config.json; do
  [ -s "$TMP/gpt2-tiny/$f" ] || fail "export wrote no $f"
done
grep -q "\"file\": \"$ADIR/llm2hef_adapter_gpt2.so\"" "$TMP/gpt2-tiny/manifest.json" ||
  fail "the export's manifest does not name $ADIR/llm2hef_adapter_gpt2.so"

step "examples/hello_adapter built against the installed SDK (llm2hef-dev)"
cmake -S "$SRC/examples/hello_adapter" -B "$TMP/hello" -G Ninja -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
  >"$TMP/hello-configure.log" 2>&1 || { cat "$TMP/hello-configure.log"; fail "configuring the example"; }
found=$(sed -n 's/^llm2hef_sdk_DIR:PATH=//p' "$TMP/hello/CMakeCache.txt")
[ "$found" = /usr/lib/cmake/llm2hef_sdk ] || fail "find_package(llm2hef_sdk) found '$found', not /usr/lib/cmake/llm2hef_sdk"
! grep -q "llm2hef will refuse adapters built here" "$TMP/hello-configure.log" ||
  { cat "$TMP/hello-configure.log"; fail "the installed SDK warns of a compiler mismatch"; }
cmake --build "$TMP/hello" >"$TMP/hello-build.log" 2>&1 || { cat "$TMP/hello-build.log"; fail "building the example"; }
[ "$(pkg-config --modversion llm2hef_sdk)" = "$(dpkg-deb -f "$DEB" Version | cut -d- -f1)" ] ||
  fail "pkg-config llm2hef_sdk version $(pkg-config --modversion llm2hef_sdk) is not the package's"
run llm2hef --adapter-path "$TMP/hello/hello_adapter.so" adapters --json >"$TMP/adapters-hello.json"
grep -q '"HelloLlamaForCausalLM"' "$TMP/adapters-hello.json" || { cat "$TMP/adapters-hello.json"; fail "the example did not load"; }
cp -r "$SRC/tests/fixtures/llama3-tiny" "$TMP/hello-llama"
chmod -R u+w "$TMP/hello-llama"
sed -i 's/"LlamaForCausalLM"/"HelloLlamaForCausalLM"/; /"model_type": "llama",/d' "$TMP/hello-llama/config.json"
run llm2hef --adapter-path "$TMP/hello/hello_adapter.so" export "$TMP/hello-llama" -o "$TMP/hello-out" \
  --cache 16 --prefill 4 --no-progress
grep -q '"name": "hello"' "$TMP/hello-out/manifest.json" || fail "the export did not use the example adapter"

echo "packages OK: $(basename "$DEB"), $(basename "$DEV")"
