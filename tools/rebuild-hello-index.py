#!/usr/bin/env python3
"""Rebuilds registry/index/hello/<version>.json, the worked example of an index
entry (docs/writing-an-adapter.md, "Publishing to the index"), from a real
build of examples/hello_adapter, following that section's steps:

  1. `cmake --install` the llm2hef build into a temporary prefix (or take an
     installed llm2hef with --prefix); it installs what the build folder
     holds, so build first;
  2. configure, build and `cmake --install` the example against it, with the
     build's own compiler (the fingerprint names its family and major version),
     linked with its install RPATH from the start so that no temporary path
     enters its build ID: two runs on one build write the same entry;
  3. `llm2hef registry manifest` of the installed library, plus `library.url`;
  4. `llm2hef registry verify` of the new entry against that library, then the
     entry replaces the old one atomically (a rename in its folder).

Usage: tools/rebuild-hello-index.py [--build DIR] [--prefix DIR] [-o FILE]
       tools/rebuild-hello-index.py --library SO [--llm2hef BIN] [-o FILE]

--library describes an adapter already built instead (the CLI test uses it).
Rerun after any change that reaches the example's library: an ABI bump, an SDK
header it includes, the families library, the compiler.

What the entry says splits in two. Stated by the source tree, the same on
every machine: what the library claims (name, version, description,
architectures, model_types, from hello_adapter.cpp), `sdk_abi` (abi.hpp) and
the publisher's fields below. Stated by the machine that ran this:
`library.sha256` and `library.size` (the compiler, its flags, the debug
information the families library brings, the paths in it) and
`sdk_fingerprint` (compiler family and major version, dependency versions).
tests/cli/registry/test_registry_index.py checks the first part of the committed entry.

Exit status: 0 written, 1 a build or check step failed, 2 usage, 3 bad input
(no such build folder or library); a refused library gets llm2hef's own status.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "hello_adapter"
INDEX = REPO / "registry" / "index"

# The publisher's side of the entry: nothing here is hosted (README of
# registry/index), so it validates but never installs.
LICENSE = "MIT"
MAINTAINER = "llm2hef example <hello@example.org>"
HOMEPAGE = "https://example.org/hello-adapter"


def library_url(version: str, file: str) -> str:
    return f"{HOMEPAGE}/{version}/{file}"


class StepFailed(Exception):
    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def run(cmd: list, what: str, own_status: bool = False) -> str:
    """Runs cmd; its stdout, or StepFailed naming the step with its output
    (exit 1, or cmd's own status when it follows llm2hef's exit codes)."""
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if result.returncode != 0:
        raise StepFailed(f"{what} failed (exit {result.returncode}): {' '.join(map(str, cmd))}\n"
                         f"{result.stdout}{result.stderr}".rstrip(), result.returncode if own_status else 1)
    return result.stdout


def cache_value(cache: Path, key: str) -> str:
    for line in cache.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.split(":")[0] == key:
            return value
    raise StepFailed(f"{cache}: no {key} (a configured llm2hef build folder has one)", 3)


def build_example(build: Path, prefix: Path | None, tmp: Path) -> tuple[Path, Path]:
    """The installed hello_adapter.so and the llm2hef it was built against."""
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        raise StepFailed(f"{build}: not a configured CMake build folder (no CMakeCache.txt)", 3)
    cmake = cache_value(cache, "CMAKE_COMMAND")
    if prefix is None:
        prefix = tmp / "llm2hef"
        run([cmake, "--install", build, "--prefix", prefix], f"installing {build}")
    llm2hef = prefix / "bin" / "llm2hef"
    if not llm2hef.is_file():
        raise StepFailed(f"{prefix}: no bin/llm2hef (not an llm2hef install prefix)", 3)
    hello_build, hello_prefix = tmp / "hello-build", tmp / "hello-prefix"
    run([cmake, "-S", EXAMPLE, "-B", hello_build, "-G", cache_value(cache, "CMAKE_GENERATOR"),
         f"-DCMAKE_MAKE_PROGRAM={cache_value(cache, 'CMAKE_MAKE_PROGRAM')}",
         f"-DCMAKE_CXX_COMPILER={cache_value(cache, 'CMAKE_CXX_COMPILER')}",
         f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON",
         # Linked with its installed RPATH from the start: the build-tree RPATH
         # (this run's temporary folder) would otherwise enter the GNU build ID,
         # and so the checksum, though `cmake --install` rewrites the RPATH itself.
         "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON"],
        "configuring examples/hello_adapter")
    run([cmake, "--build", hello_build], "building examples/hello_adapter")
    # The published library is the installed one: installing rewrites its
    # RPATH, and so its checksum.
    run([cmake, "--install", hello_build, "--prefix", hello_prefix], "installing examples/hello_adapter")
    found = sorted(hello_prefix.rglob("hello_adapter.so"))
    if len(found) != 1:
        raise StepFailed(f"cmake --install of the example put {len(found)} hello_adapter.so under {hello_prefix}")
    return found[0], llm2hef


def entry_for(library: Path, llm2hef: Path) -> dict:
    manifest = json.loads(run([llm2hef, "registry", "manifest", library, "--license", LICENSE, "--maintainer",
                               MAINTAINER, "--homepage", HOMEPAGE], f"registry manifest of {library}", own_status=True))
    manifest["library"]["url"] = library_url(manifest["version"], manifest["library"]["file"])
    return manifest


def write_checked(entry: dict, out: Path, library: Path, llm2hef: Path) -> None:
    """Writes beside `out`, verifies that file against the library, then renames
    it over `out`: a failure at any step leaves `out` as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(entry, indent=2, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.chmod(0o644)
        run([llm2hef, "registry", "verify", tmp, "--library", library], "registry verify of the new entry")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", type=Path, default=REPO / "build", help="the llm2hef build folder (default: build)")
    p.add_argument("--prefix", type=Path, help="an installed llm2hef to build against instead of installing --build "
                   "(the compiler and generator still come from --build)")
    p.add_argument("--library", type=Path, help="describe this built adapter instead of building the example")
    p.add_argument("--llm2hef", type=Path, help="with --library: the llm2hef that loads it (default: BUILD/llm2hef)")
    p.add_argument("-o", "--output", type=Path,
                   help="the entry to write (default: registry/index/<name>/<version>.json)")
    args = p.parse_args(argv)
    if args.llm2hef and not args.library:
        p.error("--llm2hef goes with --library (a build uses the llm2hef it installed)")
    if args.library and args.prefix:
        p.error("--library and --prefix exclude each other (--prefix is what the example is built against)")
    try:
        if args.library:
            if not args.library.is_file():
                raise StepFailed(f"{args.library}: no such library", 3)
            llm2hef = args.llm2hef or args.build / "llm2hef"
            if not llm2hef.is_file():
                raise StepFailed(f"{llm2hef}: no llm2hef there (pass --llm2hef or --build)", 3)
            library = args.library.resolve()
            entry = entry_for(library, llm2hef)
            out = args.output or INDEX / entry["name"] / f"{entry['version']}.json"
            write_checked(entry, out, library, llm2hef)
        else:
            with tempfile.TemporaryDirectory(prefix="llm2hef-hello-index.") as tmp:
                prefix = args.prefix.resolve() if args.prefix else None
                library, llm2hef = build_example(args.build.resolve(), prefix, Path(tmp))
                entry = entry_for(library, llm2hef)
                out = args.output or INDEX / entry["name"] / f"{entry['version']}.json"
                write_checked(entry, out, library, llm2hef)
    except StepFailed as e:
        print(f"rebuild-hello-index: {e}", file=sys.stderr)
        return e.status
    lib = entry["library"]
    print(f"wrote {out}: {entry['name']} {entry['version']}, sdk_abi {entry['sdk_abi']}, "
          f"{lib['size']} bytes, sha256 {lib['sha256']}\n"
          f"  fingerprint {entry['sdk_fingerprint']} (size, sha256 and fingerprint are this machine's build)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
