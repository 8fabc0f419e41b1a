"""Helpers for the registry client tests: a clean user (HOME and XDG folders
in a temporary directory), a throw-away signing key, index entries made by
`llm2hef registry manifest` from real adapter builds, signed indexes, and a
local HTTP server on 127.0.0.1 (http.server in a thread) whose routes the
tests define: files, truncated bodies, redirects."""
from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from pathlib import Path

from llm2hef_cli import BIN

# A well-formed test adapter the build writes (tests/plugins): "fake_good",
# version 1.0.0 here and 2.0.0 in the _v2 folder. Not a first-party name, so
# the built-in adapters do not shadow it once installed.
FAKE_GOOD = BIN.parent / "tests" / "plugins" / "test_adapters" / "fake_good.so"
FAKE_GOOD_V2 = BIN.parent / "tests" / "plugins" / "test_adapters_v2" / "fake_good.so"


class CleanHost:
    """HOME, XDG_DATA_HOME and XDG_CONFIG_HOME in tmp; no shipped keys."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.home = tmp / "home"
        self.data = tmp / "xdg-data"
        self.config = tmp / "xdg-config"
        self.shipped = tmp / "shipped-keys"
        for d in (self.home, self.data, self.config, self.shipped):
            d.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if k not in ("LLM2HEF_ADAPTER_PATH", "LLM2HEF_INDEX")}
        self.env.update(HOME=str(self.home), XDG_DATA_HOME=str(self.data), XDG_CONFIG_HOME=str(self.config),
                        LLM2HEF_SHIPPED_KEYS_DIR=str(self.shipped))

    @property
    def adapter_dir(self) -> Path:
        return self.data / "llm2hef" / "adapters"

    def run(self, *args, env=None):
        return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=120,
                              env=env or self.env)

    def ok(self, *args):
        r = self.run(*args)
        assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stdout}{r.stderr}"
        return r

    def user_files(self) -> dict[str, bytes]:
        """Every file under XDG_DATA_HOME, with its bytes (what 'nothing changed' compares)."""
        return {str(p.relative_to(self.data)): p.read_bytes() for p in sorted(self.data.rglob("*")) if p.is_file()}

    def new_key(self, prefix: str, trust: bool = True) -> Path:
        base = self.tmp / prefix
        self.ok("registry", "keys", "generate", base, "--comment", f"test key {prefix}")
        if trust:
            self.ok("registry", "keys", "add", f"{base}.pub")
        return Path(f"{base}.key")


def entry_for(host: CleanHost, library: Path, url: str, **changes) -> dict:
    """The index entry of `library`: the manifest `registry manifest` writes, plus library.url."""
    r = host.ok("registry", "manifest", library, "--license", "MIT", "--maintainer", "Test <t@example.org>")
    entry = json.loads(r.stdout)
    entry["library"]["url"] = url
    for key, value in changes.items():
        entry[key] = value
    return entry


def write_index(host: CleanHost, folder: Path, entries: list[dict], key: Path | None) -> Path:
    """folder/index.json (+ index.json.sig signed with `key` when given)."""
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "index.json"
    index.write_text(json.dumps({"index_version": 1, "adapters": entries}, indent=2))
    if key is not None:
        host.ok("registry", "sign", index, "--key", key, "--force")
    return index


class Server:
    """HTTP on 127.0.0.1, port chosen by the OS. routes: path -> callable(handler)."""

    def __init__(self):
        self.routes = {}
        routes = self.routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                route = routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                route(self)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def serve_bytes(self, path: str, data: bytes):
        def send(h):
            h.send_response(200)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        self.routes[path] = send

    def serve_truncated(self, path: str, data: bytes, keep: int):
        """Announces len(data) bytes, sends `keep`, closes the connection."""
        def send(h):
            h.send_response(200)
            h.send_header("Content-Length", str(len(data)))
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(data[:keep])
            h.wfile.flush()
            h.close_connection = True
        self.routes[path] = send

    def redirect(self, path: str, location: str):
        def send(h):
            h.send_response(302)
            h.send_header("Location", location)
            h.send_header("Content-Length", "0")
            h.end_headers()
        self.routes[path] = send

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
