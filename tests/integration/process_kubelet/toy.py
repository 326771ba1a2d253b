"""The toy container program of the process-kubelet tests (standard library only; the fixture
installs it as `toy` in the toy image with a shebang to a Python the unprivileged user may run).

    toy serve [--port P] [--host H] [--ready-file F] [--live-for S] [--ignore-term] [--record F --name N]
    toy run --name N --record F [--ignore-term] [--exit-after-term S]   # no server, just lives
    toy exit --code N
    toy connect HOST PORT        # exit 0 when a TCP connection succeeds
    toy resolve NAME             # prints the addresses NAME resolves to
    toy whoami                   # uid gid hostname fqdn
    toy cat PATH | toy write PATH TEXT | toy rm PATH | toy stat PATH | toy env
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import signal
import socket
import sys
import threading
import time


def record(path: str | None, line: str) -> None:
    print(line, flush=True)
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\n")


def on_term(args: argparse.Namespace) -> None:
    def handler(signum: int, _frame: object) -> None:
        record(args.record, f"term {args.name}")
        if not args.ignore_term:
            # A short pause shows the kubelet waits for the exit before it stops the next container.
            threading.Timer(args.exit_after_term, lambda: os._exit(0)).start()
    signal.signal(signal.SIGTERM, handler)


def serve(args: argparse.Namespace) -> None:
    born = time.monotonic()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = 200
            if self.path == "/ready" and args.ready_file and not os.path.exists(args.ready_file):
                code = 503
            if self.path == "/live" and args.live_for is not None and time.monotonic() - born > args.live_for:
                code = 500
            body = f"{socket.gethostname()} {code}\n".encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    record(args.record, f"start {args.name} uid={os.getuid()}")
    server.serve_forever()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="toy")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("serve", "run"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--port", type=int, default=8000)
        cmd.add_argument("--host", default="")
        cmd.add_argument("--ready-file")
        cmd.add_argument("--live-for", type=float)
        cmd.add_argument("--ignore-term", action="store_true")
        cmd.add_argument("--exit-after-term", type=float, default=0.5)
        cmd.add_argument("--record")
        cmd.add_argument("--name", default="toy")
    sub.add_parser("exit").add_argument("--code", type=int, required=True)
    connect = sub.add_parser("connect")
    connect.add_argument("host")
    connect.add_argument("port", type=int)
    sub.add_parser("resolve").add_argument("name")
    sub.add_parser("whoami")
    sub.add_parser("cat").add_argument("path")
    sub.add_parser("stat").add_argument("path")
    sub.add_parser("rm").add_argument("path")
    write = sub.add_parser("write")
    write.add_argument("path")
    write.add_argument("text")
    sub.add_parser("env")
    args = parser.parse_args(argv)

    if args.cmd in ("serve", "run"):
        on_term(args)
        if args.cmd == "serve":
            serve(args)
        record(args.record, f"start {args.name} uid={os.getuid()}")
        while True:
            time.sleep(3600)
    if args.cmd == "exit":
        print(f"exiting with {args.code}", flush=True)
        return args.code
    if args.cmd == "connect":
        try:
            socket.create_connection((args.host, args.port), timeout=3).close()
        except OSError as err:
            print(err)
            return 1
        return 0
    if args.cmd == "resolve":
        try:
            print(" ".join(sorted({i[4][0] for i in socket.getaddrinfo(args.name, None, socket.AF_INET)})))
        except OSError as err:
            print(err)
            return 1
        return 0
    if args.cmd == "whoami":
        print(os.getuid(), os.getgid(), socket.gethostname(), socket.getfqdn())
        return 0
    if args.cmd == "cat":
        with open(args.path) as handle:
            sys.stdout.write(handle.read())
        return 0
    if args.cmd == "stat":
        st = os.stat(args.path)
        print(f"{st.st_mode & 0o7777:o} {st.st_uid} {st.st_gid}")
        return 0
    if args.cmd == "rm":
        os.unlink(args.path)
        return 0
    if args.cmd == "write":
        with open(args.path, "w") as handle:
            handle.write(args.text)
        return 0
    print(json.dumps(dict(os.environ)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
