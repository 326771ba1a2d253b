"""Optional TLS on the agent's gRPC connections to multipooler (--grpc-ca/--grpc-cert/--grpc-key).

Multigres v0.1.0 serves gRPC over TLS when multipooler is started with `--grpc-cert/--grpc-key`, and
requires client certificates signed by `--grpc-ca` when that is set too (go/common/servenv). The
certificate is checked against the pooler's registered hostname even when the agent dials another
address for it (the playground's dial_host)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


@dataclass(frozen=True)
class GrpcTLS:
    ca_file: str | None = None  # None: the system's trust store
    cert_file: str | None = None  # with key_file: the client certificate for mutual TLS
    key_file: str | None = None

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("--grpc-cert and --grpc-key: give both or neither")

    def credentials(self) -> grpc.ChannelCredentials:
        """Read the files now: a channel made later (a new pooler, a reconnect) sees renewed files."""
        def read(path: str | None) -> bytes | None:
            return Path(path).read_bytes() if path else None
        return grpc.ssl_channel_credentials(read(self.ca_file), read(self.key_file), read(self.cert_file))


# A channel dialed before its pod's server listens (a successor, from the pass that first lists it)
# backs off between connection attempts, by default up to 120 s; a few poolers are cheap to retry.
RECONNECT_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 250), ("grpc.max_reconnect_backoff_ms", 1000)]


def open_channel(target: str, hostname: str, tls: GrpcTLS | None) -> grpc.Channel:
    """A channel to `target` (host:port); with TLS the server must prove it is `hostname`."""
    if tls is None:
        return grpc.insecure_channel(target, options=RECONNECT_OPTIONS)
    name = [] if target.rsplit(":", 1)[0] == hostname else [("grpc.ssl_target_name_override", hostname)]
    return grpc.secure_channel(target, tls.credentials(), options=[*RECONNECT_OPTIONS, *name])
