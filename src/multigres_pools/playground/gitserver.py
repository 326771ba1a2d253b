"""A Git server for GitOps tests: Git's own smart-HTTP server (`git http-backend`, Debian's git)
behind a small HTTP front on 127.0.0.1, serving the bare repositories under one folder. Flux's
GitRepository accepts only http(s) and ssh URLs, and go-git speaks no dumb HTTP, so `git daemon`
(git://) or a static file server would not do.

    with GitServer(root) as git:
        repo = git.create("platform")          # a bare repository and a work tree that pushes to it
        repo.commit({"shards/play.yaml": text}, "add the play shard")
        git.url("platform")                    # http://127.0.0.1:<port>/platform.git
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
from pathlib import Path
from types import TracebackType

HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")
IDENTITY = {"GIT_AUTHOR_NAME": "multigres-pools tests", "GIT_AUTHOR_EMAIL": "tests@multigres-pools.invalid",
            "GIT_COMMITTER_NAME": "multigres-pools tests", "GIT_COMMITTER_EMAIL": "tests@multigres-pools.invalid"}


def _git(*args: str, cwd: Path) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), **IDENTITY}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


class WorkTree:
    """A clone of one served repository; each commit is pushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def commit(self, files: dict[str, str | None], message: str) -> str:
        """Write (or, for None, remove) `files`, commit and push; returns the new commit's hash."""
        for name, text in files.items():
            target = self.path / name
            if text is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        _git("add", "--all", ".", cwd=self.path)
        _git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.path)
        _git("push", "--quiet", "origin", "HEAD:main", cwd=self.path)
        return _git("rev-parse", "HEAD", cwd=self.path).strip()


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path  # set on the subclass GitServer makes

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: tests read Flux's status, not access logs

    def _backend(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {"GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": self.client_address[0],
               "CONTENT_TYPE": self.headers.get("Content-Type") or "", "CONTENT_LENGTH": str(len(body)),
               "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
               "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol") or "",
               "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        done = subprocess.run([str(HTTP_BACKEND)], input=body, env=env, capture_output=True, timeout=120)
        head, _, payload = done.stdout.partition(b"\r\n\r\n" if b"\r\n\r\n" in done.stdout else b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class GitServer:
    """Serves the bare repositories under `root` over smart HTTP on 127.0.0.1 (a free port)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "served").mkdir(parents=True, exist_ok=True)
        handler = type("Handler", (_Handler,), {"root": root / "served"})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.git"

    def create(self, name: str) -> WorkTree:
        """A new bare repository `name` (branch main) and a work tree cloned from it."""
        bare = self.root / "served" / f"{name}.git"
        _git("init", "--quiet", "--bare", "--initial-branch=main", str(bare), cwd=self.root)
        tree = self.root / "trees" / name
        shutil.rmtree(tree, ignore_errors=True)
        tree.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--quiet", str(bare), str(tree), cwd=self.root)
        _git("checkout", "--quiet", "-B", "main", cwd=tree)
        return WorkTree(tree)

    def start(self) -> GitServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def __enter__(self) -> GitServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
