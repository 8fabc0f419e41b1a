#!/usr/bin/env bash
# Installs the current build into a temporary prefix and uses it the way a
# third party would (see tests/install/CMakeLists.txt). Arguments: build dir,
# source dir, cmake, generator, make program, C++ compiler, python3, bindir,
# libdir, includedir, docdir (relative install dirs as GNUInstallDirs set them).
set -euo pipefail

BUILD=$1 SRC=$2 CMAKE=$3 GENERATOR=$4 MAKE_PROGRAM=$5 CXX=$6 PY=$7
BINDIR=$8 LIBDIR=$9 INCDIR=${10} DOCDIR=${11:-share/doc/llm2hef}

# The host must find adapters on its own: no search path from the caller.
unset LLM2HEF_ADAPTER_PATH

TMP=$(mktemp -d "${TMPDIR:-/tmp}/llm2hef-install-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
LLM2HEF=$P/$BINDIR/llm2hef
ADIR=$P/$LIBDIR/llm2hef/adapters

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install $BUILD to $P"
"$CMAKE" --install "$BUILD" --prefix "$P" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }

for f in "$LLM2HEF" "$P/$LIBDIR/libllm2hef_sdk.so" \
         "$P/$INCDIR/llm2hef/sdk/abi.hpp" "$P/$INCDIR/llm2hef/sdk/build_info.hpp" \
         "$P/$INCDIR/llm2hef/families/llama_family.hpp" \
         "$P/$LIBDIR/cmake/llm2hef_sdk/llm2hef_sdkConfig.cmake" \
         "$P/$LIBDIR/cmake/llm2hef_sdk/llm2hef_sdkConfigVersion.cmake" \
         "$P/$LIBDIR/cmake/llm2hef_sdk/llm2hef_sdkTargets.cmake" \
         "$P/$LIBDIR/cmake/llm2hef_sdk/Llm2hefAdapter.cmake" \
         "$P/$LIBDIR/pkgconfig/llm2hef_sdk.pc"; do
  [ -e "$f" ] || fail "not installed: $f"
done
# Every first-party adapter: one folder under adapters/ each, named as its .so
# and as the adapter (a list written here went stale as families were added).
FIRST_PARTY=$(cd "$SRC/adapters" && for d in */; do if compgen -G "$d*.cpp" >/dev/null; then echo "${d%/}"; fi; done)
[ -n "$FIRST_PARTY" ] || fail "no adapter folders under $SRC/adapters"
for a in $FIRST_PARTY; do
  [ -f "$ADIR/llm2hef_adapter_$a.so" ] || fail "adapter not installed: $ADIR/llm2hef_adapter_$a.so"
done

step "the docs are installed, hailo-contract.md (cited by every finding) among them"
for d in "$SRC"/docs/*.md; do
  cmp -s "$d" "$P/$DOCDIR/$(basename "$d")" || fail "doc not installed (or differs): $P/$DOCDIR/$(basename "$d")"
done
[ -f "$P/$DOCDIR/hailo-contract.md" ] || fail "not installed: $P/$DOCDIR/hailo-contract.md"
grep -q '^## 9\. ' "$P/$DOCDIR/hailo-contract.md" || fail "installed hailo-contract.md has no section 9"
for d in "$SRC"/docs/*.svg; do
  cmp -s "$d" "$P/$DOCDIR/$(basename "$d")" || fail "picture not installed (or differs): $P/$DOCDIR/$(basename "$d")"
done

step "a man page per command, and the bash and zsh completions"
while IFS= read -r cmd; do
  page="$P/share/man/man1/llm2hef${cmd:+-${cmd// /-}}.1.gz"
  [ -f "$page" ] || fail "no man page for 'llm2hef $cmd': $page"
done < "$BUILD/cli-docs/commands.txt"
[ "$(wc -l < "$BUILD/cli-docs/commands.txt")" -gt 20 ] || fail "$BUILD/cli-docs/commands.txt lists too few commands"
[ -f "$P/share/bash-completion/completions/llm2hef" ] || fail "bash completion not installed"
[ -f "$P/share/zsh/vendor-completions/_llm2hef" ] || fail "zsh completion not installed"

step "findings cite the installed hailo-contract.md by its path"
# A HEF with one finding (an hw_arch the Hailo-10H does not run), written from
# the format facts; the installed hef check must end by naming the installed doc.
"$PY" - "$SRC/tools/fixtures" "$TMP/arch5.hef" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import hef_writer
open(sys.argv[2], "wb").write(hef_writer.genai_hef(hw_arch=5))
PY
set +e
"$LLM2HEF" hef check "$TMP/arch5.hef" >"$TMP/check-arch5.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat "$TMP/check-arch5.txt"; fail "hef check of an hw_arch 5 HEF: exit $rc, expected 1"; }
cited=$(sed -n 's/^sections cited refer to //p' "$TMP/check-arch5.txt")
[ "$(realpath -m "$cited")" = "$(realpath "$P/$DOCDIR/hailo-contract.md")" ] \
  || { cat "$TMP/check-arch5.txt"; fail "hef check cites '$cited', not the installed $P/$DOCDIR/hailo-contract.md"; }
"$LLM2HEF" hef check "$TMP/arch5.hef" --json >"$TMP/check-arch5.json" || true
"$PY" - "$TMP/check-arch5.json" "$P/$DOCDIR/hailo-contract.md" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
assert report["ok"] is False, report
assert os.path.realpath(report["contract_doc"]) == os.path.realpath(sys.argv[2]), report["contract_doc"]
assert os.path.isfile(report["contract_doc"])
print("ok: findings cite", report["contract_doc"])
PY

step "the install step indexed the installed adapters, and the index verifies"
[ -f "$ADIR/index.json" ] || fail "no $ADIR/index.json"
[ -f "$P/share/llm2hef/schema/adapter-manifest.schema.json" ] || fail "manifest schema not installed"
"$LLM2HEF" registry verify "$ADIR/index.json" >"$TMP/verify-installed.log" \
  || { cat "$TMP/verify-installed.log"; fail "registry verify of the installed index"; }
tail -1 "$TMP/verify-installed.log"

step "installed binaries resolve libllm2hef_sdk.so inside the prefix (RPATH)"
for f in "$LLM2HEF" "$ADIR/llm2hef_adapter_gpt2.so"; do
  sdk=$(ldd "$f" | awk '/libllm2hef_sdk\.so/ {print $3}')
  [ -n "$sdk" ] || { ldd "$f"; fail "$f: libllm2hef_sdk.so not found"; }
  [ "$(realpath "$(dirname "$sdk")")" = "$(realpath "$P/$LIBDIR")" ] || fail "$f uses $sdk, not the installed SDK"
done

step "installed llm2hef finds the installed adapters first, with no environment"
"$LLM2HEF" adapters --verbose --json >"$TMP/adapters-installed.json"
"$PY" - "$TMP/adapters-installed.json" "$ADIR" $FIRST_PARTY <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
adir = os.path.realpath(sys.argv[2])
by_name = {a["name"]: a for a in report["adapters"]}
for name in sys.argv[3:]:
    assert name in by_name, f"adapter {name} not loaded: {sorted(by_name)}"
    where = os.path.realpath(os.path.dirname(by_name[name]["file"]))
    assert where == adir, f"{name} loaded from {where}, expected the install folder {adir}"
# Nor does it look into the tree it was built in: a packaged llm2hef must not
# load adapters from a path on the machine that built it.
build_roots = [r["path"] for r in report["roots"] if r["kind"] == "build tree"]
assert not build_roots, f"the installed llm2hef searches the build tree: {build_roots}"
print("ok:", ", ".join(f"{n} <- {by_name[n]['file']}" for n in sorted(by_name)))
PY

step "pkg-config"
export PKG_CONFIG_PATH=$P/$LIBDIR/pkgconfig
flags=$(pkg-config --cflags --libs llm2hef_sdk) || fail "pkg-config --cflags --libs llm2hef_sdk"
echo "$flags"
[ "$(pkg-config --modversion llm2hef_sdk)" = "$(sed -n 's/.*LLM2HEF_SDK_VERSION "\(.*\)"/\1/p' "$P/$INCDIR/llm2hef/sdk/build_info.hpp")" ] \
  || fail "pkg-config version differs from the installed SDK's"
[ "$(realpath "$(pkg-config --variable=includedir llm2hef_sdk)")" = "$(realpath "$P/$INCDIR")" ] \
  || fail "pkg-config includedir $(pkg-config --variable=includedir llm2hef_sdk) is not $P/$INCDIR"
[ "$(realpath "$(pkg-config --variable=adapterdir llm2hef_sdk)")" = "$(realpath "$ADIR")" ] \
  || fail "pkg-config adapterdir is not $ADIR"

step "pkg-config alone is enough to build the example"
mkdir "$TMP/pc-adapters"
# shellcheck disable=SC2086  # $flags is a list of compiler flags
"$CXX" -std=c++20 -fPIC -shared -fvisibility=hidden -fvisibility-inlines-hidden -Wl,--no-undefined \
  "$SRC/examples/hello_adapter/hello_adapter.cpp" $flags -o "$TMP/pc-adapters/hello_adapter.so" \
  || fail "compiling the example with pkg-config's flags"
"$LLM2HEF" --adapter-path "$TMP/pc-adapters" adapters --json >"$TMP/adapters-pc.json"
grep -q '"HelloLlamaForCausalLM"' "$TMP/adapters-pc.json" && grep -qF "\"$TMP/pc-adapters/hello_adapter.so\"" "$TMP/adapters-pc.json" \
  || { cat "$TMP/adapters-pc.json"; fail "the pkg-config build of the example did not load"; }

step "configure and build examples/hello_adapter out of tree"
HB=$TMP/hello-build
"$CMAKE" -S "$SRC/examples/hello_adapter" -B "$HB" -G "$GENERATOR" \
  -DCMAKE_MAKE_PROGRAM="$MAKE_PROGRAM" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_PREFIX_PATH="$P" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
  -DCMAKE_INSTALL_PREFIX="$P" >"$TMP/hello-configure.log" 2>&1 \
  || { cat "$TMP/hello-configure.log"; fail "configuring the example"; }
! grep -q "llm2hef will refuse adapters built here" "$TMP/hello-configure.log" \
  || { cat "$TMP/hello-configure.log"; fail "the package warns of a compiler mismatch with the build's own compiler"; }
found=$(sed -n 's/^llm2hef_sdk_DIR:PATH=//p' "$HB/CMakeCache.txt")
[ "$(realpath "$found")" = "$(realpath "$P/$LIBDIR/cmake/llm2hef_sdk")" ] \
  || fail "find_package(llm2hef_sdk) found $found, not the temporary prefix"
"$CMAKE" --build "$HB" >"$TMP/hello-build.log" 2>&1 || { cat "$TMP/hello-build.log"; fail "building the example"; }
[ -f "$HB/hello_adapter.so" ] || fail "the example did not produce $HB/hello_adapter.so"

step "the installed (published) example has an \$ORIGIN-only RPATH"
"$CMAKE" --install "$HB" --prefix "$TMP/hello-rpath-prefix" >"$TMP/hello-install.log" 2>&1 \
  || { cat "$TMP/hello-install.log"; fail "installing the example into its own prefix"; }
published=$(find "$TMP/hello-rpath-prefix" -name hello_adapter.so | head -1)
[ -n "$published" ] || fail "no hello_adapter.so under $TMP/hello-rpath-prefix"
runpath=$(readelf -d "$published" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\2/p')
echo "RPATH: $runpath"
for entry in ${runpath//:/ }; do
  case "$entry" in
    '$ORIGIN'*) ;;
    *) fail "$published: RPATH entry '$entry' is not \$ORIGIN-relative (a path of the build machine)";;
  esac
done

mkdir "$TMP/adapters"
cp "$HB/hello_adapter.so" "$TMP/adapters/"

step "installed llm2hef loads the example through --adapter-path"
"$LLM2HEF" --adapter-path "$TMP/adapters" adapters --json >"$TMP/adapters-hello.json"
"$PY" - "$TMP/adapters-hello.json" "$TMP/adapters/hello_adapter.so" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
hello = [a for a in report["adapters"] if a["name"] == "hello"]
assert hello, f"example adapter not listed: {[a['name'] for a in report['adapters']]}"
assert hello[0]["architectures"] == ["HelloLlamaForCausalLM"], hello[0]
assert os.path.realpath(hello[0]["file"]) == os.path.realpath(sys.argv[2]), hello[0]["file"]
print("ok: hello", hello[0]["version"], hello[0]["architectures"], hello[0]["file"])
PY

step "publish the example: write its manifest, verify it, and catch a tampered copy"
"$LLM2HEF" registry manifest "$TMP/adapters/hello_adapter.so" --license MIT --maintainer "Example <hello@example.org>" \
  -o "$TMP/adapters/hello_adapter.json" || fail "registry manifest of the example"
"$LLM2HEF" registry verify "$TMP/adapters" || fail "registry verify of the example's manifest"
mkdir "$TMP/tampered"
cp "$TMP/adapters/hello_adapter.json" "$TMP/adapters/hello_adapter.so" "$TMP/tampered/"
# Same size, other bytes: only the SHA-256 can tell (a size change is caught earlier).
size=$(stat -c %s "$TMP/tampered/hello_adapter.so")
printf 'tampered' | dd of="$TMP/tampered/hello_adapter.so" bs=1 seek=$((size - 8)) conv=notrunc status=none
set +e
"$LLM2HEF" registry verify "$TMP/tampered" >"$TMP/verify-tampered.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] && grep -q "checksum mismatch" "$TMP/verify-tampered.log" \
  || { cat "$TMP/verify-tampered.log"; fail "a tampered example passed registry verify (exit $rc)"; }

step "export a checkpoint whose architecture only the example claims"
M=$TMP/hello-llama-tiny
cp -r "$SRC/tests/fixtures/llama3-tiny" "$M"
chmod -R u+w "$M"
"$PY" - "$M/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["architectures"] = ["HelloLlamaForCausalLM"]
c.pop("model_type", None)
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
# Without the example the model is refused (exit 4: no adapter claims it).
set +e
"$LLM2HEF" export "$M" -o "$TMP/out-none" --cache 16 --prefill 4 --no-progress >"$TMP/export-none.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 4 ] || { cat "$TMP/export-none.log"; fail "export without the example: exit $rc, expected 4"; }
[ ! -e "$TMP/out-none" ] || fail "a refused export left $TMP/out-none behind"

"$LLM2HEF" --adapter-path "$TMP/adapters" export "$M" -o "$TMP/out" --cache 16 --prefill 4 --no-progress \
  || fail "export with the example adapter"
"$PY" - "$TMP/out/manifest.json" "$TMP/out" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))
a = m["adapter"]
assert a["name"] == "hello", a
assert a["matched"] == "HelloLlamaForCausalLM" and a["matched_by"] == "architectures", a
for f in ("model.onnx", "model.onnx.data", "resources/embeddings.npy", "resources/theta.npy",
          "resources/hailo-config.json", "compile.py"):
    assert os.path.isfile(os.path.join(sys.argv[2], f)), f"missing {f}"
print("ok: manifest adapter", a)
PY

step "registry: the example from cmake --install of its own project, to a signed index, to install on a clean host, to export"
# The third party installs its build into its own prefix ...
HP=$TMP/hello-prefix
"$CMAKE" --install "$HB" --prefix "$HP" >"$TMP/hello-install-own.log" \
  || { cat "$TMP/hello-install-own.log"; fail "cmake --install of the example into its own prefix"; }
HSO=$(find "$HP" -name hello_adapter.so -type f | head -1)
[ -n "$HSO" ] || fail "cmake --install of the example put no hello_adapter.so under $HP"
# ... hosts the .so, writes its entry (registry manifest + where it is fetched
# from) into the repository's index folder, as a pull request would ...
SITE=$TMP/registry-site
REPO_INDEX=$TMP/repo-index/hello
mkdir -p "$SITE/hello/0.1.0" "$REPO_INDEX"
cp "$HSO" "$SITE/hello/0.1.0/hello_adapter.so"
"$LLM2HEF" registry manifest "$SITE/hello/0.1.0/hello_adapter.so" --license MIT \
  --maintainer "Example <hello@example.org>" -o "$TMP/hello-manifest.json" || fail "registry manifest of the installed example"
"$PY" - "$TMP/hello-manifest.json" "$REPO_INDEX/0.1.0.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["library"]["url"] = "hello/0.1.0/hello_adapter.so"
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
# ... and the release collects the index (checked against the first-party
# names) and signs it with the key whose public half ships with llm2hef.
"$LLM2HEF" registry collect "$TMP/repo-index" --first-party "$ADIR/index.json" -o "$SITE/index.json" \
  || fail "registry collect of the index"
"$LLM2HEF" registry keys generate "$TMP/release" --comment "throw-away release key" >/dev/null || fail "keys generate"
mkdir -p "$P/share/llm2hef/keys"
cp "$TMP/release.pub" "$P/share/llm2hef/keys/release.pub"
"$LLM2HEF" registry sign "$SITE/index.json" --key "$TMP/release.key" >/dev/null || fail "registry sign"

# A clean host: its own HOME, XDG defaults (no XDG_* set), nothing installed.
CLEAN=$TMP/clean-home
mkdir -p "$CLEAN"
clean() { env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u LLM2HEF_SHIPPED_KEYS_DIR -u LLM2HEF_INDEX HOME="$CLEAN" "$LLM2HEF" "$@"; }
clean registry keys list --json >"$TMP/keys.json" || fail "registry keys list"
grep -q '"shipped"' "$TMP/keys.json" || { cat "$TMP/keys.json"; fail "the installed llm2hef does not trust the key in its share/llm2hef/keys"; }
clean registry search hello --index "$SITE" --json >"$TMP/search.json" || fail "registry search"
"$PY" - "$TMP/search.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["adapters"]
assert [x["name"] for x in a] == ["hello"] and a[0]["versions"][0]["compatible"] is True, a
PY
clean registry install hello --index "file://$SITE/index.json" || fail "registry install hello on the clean host"
USER_ADIR=$CLEAN/.local/share/llm2hef/adapters
[ -f "$USER_ADIR/hello_adapter.so" ] || fail "registry install did not put the example in $USER_ADIR"
clean registry verify "$USER_ADIR" >/dev/null || fail "registry verify of the installed example"
clean export "$M" -o "$TMP/out-registry" --cache 16 --prefill 4 --no-progress \
  || fail "export with the adapter installed from the index"
"$PY" - "$TMP/out-registry/manifest.json" "$USER_ADIR/hello_adapter.so" <<'PY'
import json, os, sys
a = json.load(open(sys.argv[1]))["adapter"]
assert a["name"] == "hello" and os.path.realpath(a["file"]) == os.path.realpath(sys.argv[2]), a
print("ok: exported with", a["name"], a["version"], "from", a["file"])
PY
clean registry uninstall hello >/dev/null || fail "registry uninstall hello"
[ ! -e "$USER_ADIR/hello_adapter.so" ] || fail "uninstall left $USER_ADIR/hello_adapter.so"
rm -rf "$P/share/llm2hef/keys/release.pub"

step "tools/rebuild-hello-index.py builds the example against this prefix and writes its index entry"
# The script's own build path (the CLI test gives it a built library): what
# the source tree decides must equal the committed entry; size, SHA-256 and
# fingerprint are this machine's (docs/registry.md).
"$PY" "$SRC/tools/rebuild-hello-index.py" --build "$BUILD" --prefix "$P" -o "$TMP/hello-entry.json" \
  >"$TMP/rebuild-hello.log" 2>&1 || { cat "$TMP/rebuild-hello.log"; fail "tools/rebuild-hello-index.py --prefix $P"; }
"$PY" - "$TMP/hello-entry.json" "$SRC/registry/index/hello/0.1.0.json" <<'PY'
import json, sys
written, committed = (json.load(open(p)) for p in sys.argv[1:])
for e in (written, committed):
    e.pop("sdk_fingerprint")
    e["library"].pop("sha256")
    e["library"].pop("size")
assert written == committed, f"registry/index/hello/0.1.0.json is stale (run tools/rebuild-hello-index.py): {written}"
print("ok: the committed hello entry is what the script writes")
PY

step "cmake --install of the example drops it into the prefix's adapter folder"
"$CMAKE" --install "$HB" >"$TMP/hello-install.log" || { cat "$TMP/hello-install.log"; fail "installing the example"; }
[ -f "$ADIR/hello_adapter.so" ] || fail "the example was not installed to $ADIR"
"$LLM2HEF" adapters --json >"$TMP/adapters-installed-hello.json"
"$PY" - "$TMP/adapters-installed-hello.json" "$ADIR/hello_adapter.so" <<'PY'
import json, os, sys
hello = [a for a in json.load(open(sys.argv[1]))["adapters"] if a["name"] == "hello"]
assert hello and os.path.realpath(hello[0]["file"]) == os.path.realpath(sys.argv[2]), hello
print("ok: installed example found with no --adapter-path")
PY

echo "PASS"
