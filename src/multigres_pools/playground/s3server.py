"""An S3 endpoint on this machine for S3 backup repositories: versitygw v1.8.0 with its posix back end
(each bucket a directory), built from the Go module proxy (playground/s3server_bin) and cached like
the node's binaries.

    server = S3Server(workdir, host=stack.host_ip).start()   # HTTPS, as pgBackRest requires
    server.endpoint, server.access_key, server.secret_key     # for spec.backup.s3 and its Secret
    server.objects("backups")                                 # keys under a bucket, as stored
    server.stop()

Pods of the process kubelet have network namespaces of their own, so the server listens on the
node's bridge address (`host`), which they and this machine reach; never on a public address.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

from . import pki, ports
from .cluster import spawn, stop_process
from .node_binaries import GoBuild, cli, resolve

VERSION = "v1.8.0"
BUILDS = (GoBuild("versitygw", VERSION, Path(__file__).resolve().parent / "s3server_bin",
                  "github.com/versity/versitygw/cmd/versitygw", ("versitygw",), minutes="about 3 minutes"),)
REGION = "us-east-1"


@dataclass
class S3Server:
    workdir: Path
    host: str = "127.0.0.1"
    buckets: tuple[str, ...] = ("backups",)
    access_key: str = "multigres-pools-test"
    secret_key: str = "multigres-pools-test-secret"
    port: int = 0  # picked at start
    process: Popen[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        """host:port, the form v0.1.0 hands to pgBackRest as repo1-s3-endpoint."""
        return f"{self.host}:{self.port}"

    @property
    def root(self) -> Path:
        return self.workdir / "buckets"

    def start(self, timeout: float = 30) -> S3Server:
        binary = resolve(BUILDS)["versitygw"]
        tls = pki.generate(self.workdir / "pki", (self.host,))
        for bucket in self.buckets:
            (self.root / bucket).mkdir(parents=True, exist_ok=True)
        log = self.workdir / "versitygw.log"

        def attempt(number: int) -> None:
            self.port = ports.free_port(self.host)
            offset = ports.log_size(log)
            self.process = spawn([str(binary), "--access", self.access_key, "--secret", self.secret_key,
                                  "--cert", str(tls.serving_cert), "--key", str(tls.serving_key),
                                  "--port", self.endpoint, "posix", str(self.root)], log)
            try:
                ports.wait_bound(self.process, self._listening, timeout, "versitygw", log, offset)
            except BaseException:
                self.stop()
                raise

        ports.start_with_retries(attempt, "versitygw")
        return self

    def _listening(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        stop_process(self.process, grace=5)
        self.process = None

    def objects(self, bucket: str) -> list[str]:
        """The object keys of `bucket`, sorted (the posix back end keeps one file per object)."""
        base = self.root / bucket
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())


if __name__ == "__main__":
    sys.exit(cli(BUILDS, __doc__ or ""))
