"""A stand-in for the Hugging Face Hub on 127.0.0.1, for tests/cli/hub/test_hub.py.

It answers the two requests llm2hef makes, as the Hub does (huggingface_hub's
hf_api.py and file_download.py are the reference):
- GET /api/models/ORG/NAME/revision/REV?blobs=true: the commit ("sha") and
  "siblings", each file with its size and git blob id, and for an LFS file
  "lfs": {"sha256", "size", "pointerSize"};
- GET /ORG/NAME/resolve/REV/PATH: a regular file's bytes (ETag, X-Repo-Commit);
  an LFS file answers 302 to /lfs/SHA256 (X-Linked-Etag, X-Linked-Size), as the
  Hub sends LFS files to its CDN, and that URL serves the bytes.
Refusals carry X-Error-Code as the Hub's do (RepoNotFound, RevisionNotFound,
EntryNotFound, GatedRepo). Byte ranges ("Range: bytes=N-") are answered 206.
Every request is recorded, so tests can count what was downloaded.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".npz")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    gated: bool = False


@dataclass
class Request:
    path: str
    range: str | None
    authorization: str | None


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    token: str = "hf_good_token"       # the one token a gated repo accepts
    corrupt: set[str] = field(default_factory=set)  # file names served with one byte changed
    delay_per_chunk: float = 0.0       # seconds between 4 KiB chunks of a file (a slow link)
    ignore_range: bool = False         # answer 200 with the whole file to a Range request
    cdn_host: str | None = None        # LFS redirects go to http://<cdn_host>:<port>/lfs/... (another host)
    requests: list[Request] = field(default_factory=list)

    def add_folder(self, repo_id: str, folder: Path, **kwargs) -> Repo:
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        self.repos[repo_id] = Repo(files, **kwargs)
        return self.repos[repo_id]

    def downloads(self) -> list[Request]:
        """The requests that fetched file bytes (resolve and the LFS redirect target)."""
        return [r for r in self.requests if not r.path.startswith("/api/")]

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                hub.requests.append(Request(self.path, self.headers.get("Range"), self.headers.get("Authorization")))
                try:
                    hub.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (a test killed it)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # -- answers ---------------------------------------------------------

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        path = urlsplit(h.path).path
        parts = path.split("/")
        if path.startswith("/api/models/") and len(parts) >= 7 and parts[5] == "revision":
            return self.metadata(h, f"{parts[3]}/{parts[4]}", unquote("/".join(parts[6:])))
        if path.startswith("/lfs/"):
            return self.lfs(h, parts[2])
        if len(parts) >= 6 and parts[3] == "resolve":
            return self.resolve(h, f"{parts[1]}/{parts[2]}", unquote(parts[4]), unquote("/".join(parts[5:])))
        self.send(h, 404, b"not found", {"X-Error-Code": "EntryNotFound"})

    def repo_at(self, h, repo_id: str, revision: str) -> Repo | None:
        repo = self.repos.get(repo_id)
        if repo is None:  # the Hub answers 401 for a repository it does not show
            self.send(h, 401, b"Repository not found", {"X-Error-Code": "RepoNotFound"})
            return None
        if revision not in ("main", repo.commit):
            self.send(h, 404, b"Revision not found", {"X-Error-Code": "RevisionNotFound"})
            return None
        return repo

    def metadata(self, h, repo_id: str, revision: str) -> None:
        repo = self.repo_at(h, repo_id, revision)
        if repo is None:
            return
        siblings = []
        for name, data in sorted(repo.files.items()):
            entry = {"rfilename": name, "size": len(data), "blobId": git_blob_id(data)}
            if name.endswith(LFS_SUFFIXES):
                entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(entry)
        body = json.dumps({"id": repo_id, "sha": repo.commit, "gated": "manual" if repo.gated else False,
                           "siblings": siblings}).encode()
        self.send(h, 200, body, {"Content-Type": "application/json"})

    def resolve(self, h, repo_id: str, revision: str, name: str) -> None:
        repo = self.repo_at(h, repo_id, revision)
        if repo is None:
            return
        if repo.gated and h.headers.get("Authorization") != f"Bearer {self.token}":
            self.send(h, 401, b"Access to this model is restricted", {"X-Error-Code": "GatedRepo"})
            return
        data = repo.files.get(name)
        if data is None:
            self.send(h, 404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
            return
        headers = {"X-Repo-Commit": repo.commit}
        if name.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(data).hexdigest()
            self.lfs_names[sha] = (name, data)
            cdn = f"http://{self.cdn_host}:{self.server.server_address[1]}" if self.cdn_host else ""
            headers.update({"Location": f"{cdn}/lfs/{sha}?signature=x", "X-Linked-Etag": f'"{sha}"',
                            "X-Linked-Size": str(len(data))})
            self.send(h, 302, b"", headers)
            return
        headers["ETag"] = f'"{git_blob_id(data)}"'
        self.send_file(h, name, data, headers)

    def lfs(self, h, sha: str) -> None:
        if sha not in self.lfs_names:
            self.send(h, 404, b"no such object", {})
            return
        name, data = self.lfs_names[sha]
        self.send_file(h, name, data, {"ETag": f'"{sha}"'})

    @property
    def lfs_names(self) -> dict[str, tuple[str, bytes]]:
        if not hasattr(self, "_lfs"):
            self._lfs = {}
        return self._lfs

    def send_file(self, h, name: str, data: bytes, headers: dict[str, str]) -> None:
        if name in self.corrupt:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        start = 0
        rng = h.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-") and not self.ignore_range:
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                self.send(h, 416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        self.send(h, 206 if start else 200, data[start:], headers)

    def send(self, h, status: int, body: bytes, headers: dict[str, str]) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not self.delay_per_chunk or status >= 300:
            h.wfile.write(body)
            return
        for at in range(0, len(body), 4096):
            h.wfile.write(body[at:at + 4096])
            h.wfile.flush()
            time.sleep(self.delay_per_chunk)
