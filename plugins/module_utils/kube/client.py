"""A small Kubernetes API client that speaks JSON over one kept-alive HTTPS connection.

Why not the `kubernetes` package here: importing it costs 0.3-0.4 s per module run (it loads every
API group and model), which is more than a whole no-op reconcile is allowed to take. This client
does only what the engine needs — get, list, server-side apply, merge/JSON patch, create, delete
with preconditions — and COUNTS every request by verb, so tests can prove that a pass with nothing
to do sends zero writes. Credentials come from a kubeconfig (client certificates, bearer tokens,
token files, basic auth, exec plugins) or from the in-cluster service account; a kubeconfig that
needs a legacy `auth-provider` is handed to the `kubernetes` package's loader instead.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import threading
import urllib.parse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.manifest import Manifest
from . import write_fence

READ_VERBS = frozenset({"get", "list"})
IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# Kind -> plural where the English rule below gets it wrong (none of the shard's kinds, so far).
_PLURALS: dict[str, str] = {"Endpoints": "endpoints"}


METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class KubeError(Exception):
    def __init__(self, status: int, message: str, body: Manifest | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.body = body or {}

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


def _plural(word: str) -> str:
    """The apiserver's default plural: class -> classes, policy -> policies, pod -> pods."""
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def resource_path(api_version: str, kind: str, namespace: str | None, name: str | None = None,
                  subresource: str | None = None) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    plural = _PLURALS.get(kind) or _plural(kind.lower())
    path = f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"
    if name:
        path += f"/{urllib.parse.quote(name)}"
    if subresource:
        path += f"/{subresource}"
    return path


_SSL_CONTEXTS: dict[tuple[bool, bytes | None, bytes | None, bytes | None], ssl.SSLContext] = {}


@dataclass
class Credentials:
    server: str
    ca_data: bytes | None = None
    insecure: bool = False
    cert_data: bytes | None = None
    key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    basic: tuple[str, str] | None = None
    exec_config: Manifest | None = None

    def headers(self) -> dict[str, str]:
        token = self.token
        if self.token_file:
            token = Path(self.token_file).read_text().strip()
        if token:
            return {"Authorization": f"Bearer {token}"}
        if self.basic:
            raw = base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            return {"Authorization": f"Basic {raw}"}
        return {}

    def ssl_context(self) -> ssl.SSLContext:
        """One context per set of trust and client material in this process: building one (the CA, a
        key pair loaded through files) cost a process that opens many short-lived clients, such as the
        test harness, an eighth of its CPU. A context serves any number of connections and threads."""
        key = (self.insecure, self.ca_data, self.cert_data, self.key_data)
        ctx = _SSL_CONTEXTS.get(key)
        if ctx is None:
            ctx = _SSL_CONTEXTS[key] = self._new_ssl_context()
        return ctx

    def _new_ssl_context(self) -> ssl.SSLContext:
        # As kubectl: the kubeconfig's CA, when it names one, is the only trust anchor (the system's
        # roots would also accept any publicly trusted certificate for the server's name, and loading
        # them costs every client ~10 ms of CPU); without one, the system's roots.
        if self.insecure or not self.ca_data:
            ctx = ssl.create_default_context()
        else:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_data and self.key_data:
            # ssl only loads key pairs from files; keep them on disk just long enough to load.
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
                cert.write_bytes(self.cert_data)
                key.write_bytes(self.key_data)
                os.chmod(key, 0o600)
                ctx.load_cert_chain(str(cert), str(key))
        return ctx


def _read(base: Path, path: str | None, data: str | None) -> bytes | None:
    if data:
        return base64.b64decode(data)
    if path:
        return (base / path).read_bytes()  # an absolute `path` ignores `base`
    return None


def _merge_kubeconfigs(paths: list[Path]) -> Manifest:
    """KUBECONFIG may list several files; the first definition of each name wins (kubectl's rule).
    Each entry remembers its file's folder, against which its relative paths resolve."""
    import yaml

    merged: Manifest = {"current-context": None, "clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {"clusters": set(), "users": set(), "contexts": set()}
    for path in paths:
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"kubeconfig {path}: cannot be read: {exc}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"kubeconfig {path}: not a kubeconfig (a YAML mapping with clusters, users, contexts)")
        merged["current-context"] = merged["current-context"] or doc.get("current-context")
        for section, names in seen.items():
            for entry in doc.get(section) or []:
                if entry.get("name") not in names:
                    names.add(entry.get("name"))
                    merged[section].append({**entry, "_base": str(path.parent)})
    return merged


def _pick(doc: Manifest, section: str, entry_name: str, where: str) -> Manifest:
    entries: list[Manifest] = doc.get(section) or []
    for entry in entries:
        if entry.get("name") == entry_name:
            return entry
    raise ValueError(f"kubeconfig {where} has no {section[:-1]} named {entry_name!r}")


def _exec_credentials(spec: Manifest) -> Manifest:
    """Run a client-go credential plugin and return its ExecCredential status."""
    env = dict(os.environ)
    for item in spec.get("env") or []:
        env[item["name"]] = item["value"]
    api_version = spec.get("apiVersion", "client.authentication.k8s.io/v1")
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}})
    out = subprocess.run([spec["command"], *(spec.get("args") or [])], env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout).get("status") or {}


def _legacy_loader(path: Path, context: str | None) -> Credentials:
    """auth-provider kubeconfigs (gcp, oidc, azure): let the kubernetes package produce a token."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise ValueError("a kubeconfig user with `auth-provider` needs the `kubernetes` Python library: "
                         "pip install kubernetes (meta/requirements.txt pins the tested version)") from None

    cfg = client.Configuration()
    config.load_kube_config(
        config_file=str(path), context=context, client_configuration=cfg)
    token = (cfg.api_key or {}).get("authorization", "").removeprefix("Bearer ").strip()
    ca = Path(cfg.ssl_ca_cert).read_bytes() if cfg.ssl_ca_cert else None
    return Credentials(cfg.host, ca_data=ca, insecure=not cfg.verify_ssl, token=token or None)


KUBECONFIG_VARIABLES = ("K8S_AUTH_KUBECONFIG", "KUBECONFIG")  # kubernetes.core's first, then kubectl's


def _kubeconfig_variable() -> tuple[str, str] | None:
    """The first of KUBECONFIG_VARIABLES that is set: (its name, its value)."""
    return next(((name, value) for name in KUBECONFIG_VARIABLES if (value := os.environ.get(name))), None)


def kubeconfig_paths(kubeconfig: str | None) -> list[Path]:
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    if variable := _kubeconfig_variable():
        return [Path(p).expanduser() for p in variable[1].split(os.pathsep) if p]
    default = Path.home() / ".kube" / "config"
    return [default] if default.exists() else []


def load_credentials(kubeconfig: str | None = None, context: str | None = None) -> Credentials:
    """From the kubeconfig (argument, K8S_AUTH_KUBECONFIG, KUBECONFIG, ~/.kube/config), else in-cluster."""
    paths = [p for p in kubeconfig_paths(kubeconfig) if p.exists()]
    if not paths:
        if kubeconfig:
            raise ValueError(f"kubeconfig {kubeconfig} does not exist")
        if variable := _kubeconfig_variable():
            name, value = variable
            raise ValueError(f"{name}={value}: no such file; set it to a kubeconfig that exists, or unset it")
        return _in_cluster()
    doc = _merge_kubeconfigs(paths)
    where = os.pathsep.join(map(str, paths))
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise ValueError(f"kubeconfig {where} has no current-context: choose one (kubectl config use-context NAME)")
    try:
        ctx = _pick(doc, "contexts", ctx_name, where)["context"]
        cluster_entry = _pick(doc, "clusters", ctx["cluster"], where)
        user_entry = _pick(doc, "users", ctx["user"], where) if ctx.get("user") else {"user": {}}
        cluster, user = cluster_entry["cluster"], user_entry.get("user") or {}
        server = cluster["server"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"kubeconfig {where}: context {ctx_name!r} is incomplete (missing {exc})") from None
    if user.get("auth-provider"):
        return _legacy_loader(paths[0], ctx_name)
    cbase, ubase = Path(cluster_entry["_base"]), Path(user_entry.get("_base") or cluster_entry["_base"])
    creds = Credentials(
        server=server.rstrip("/"),
        ca_data=_read(cbase, cluster.get("certificate-authority"), cluster.get("certificate-authority-data")),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        cert_data=_read(ubase, user.get("client-certificate"), user.get("client-certificate-data")),
        key_data=_read(ubase, user.get("client-key"), user.get("client-key-data")),
        token=user.get("token"),
        token_file=str(ubase / user["tokenFile"]) if user.get("tokenFile") else None,
        basic=(user["username"], user.get("password", "")) if user.get("username") else None,
        exec_config=user.get("exec"),
    )
    if creds.exec_config:
        status = _exec_credentials(creds.exec_config)
        creds.token = status.get("token") or creds.token
        if status.get("clientCertificateData"):
            creds.cert_data = status["clientCertificateData"].encode()
            creds.key_data = status["clientKeyData"].encode()
    return creds


def _in_cluster() -> Credentials:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not (IN_CLUSTER_DIR / "token").exists():
        raise ValueError("no kubeconfig found (KUBECONFIG is unset and there is no ~/.kube/config) and not running "
                         "in a cluster: set KUBECONFIG or give the path of a kubeconfig")
    if ":" in host:
        host = f"[{host}]"
    return Credentials(server=f"https://{host}:{port}", ca_data=(IN_CLUSTER_DIR / "ca.crt").read_bytes(),
                       token_file=str(IN_CLUSTER_DIR / "token"))


@dataclass
class KubeClient:
    """JSON requests over one connection; `counts` tallies requests by verb (get, list, apply, ...).

    Safe to share between threads: requests on the one connection take turns (the data-plane fan-out
    resolves pod addresses through it from a thread pool)."""

    creds: Credentials
    timeout: float = 30.0
    user_agent: str = "multigres-pools"
    counts: Counter[str] = field(default_factory=Counter)
    _conn: http.client.HTTPConnection | None = field(default=None, repr=False)
    _ctx: ssl.SSLContext | None = field(default=None, repr=False)
    _turn: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def writes(self) -> int:
        return sum(n for verb, n in self.counts.items() if verb not in READ_VERBS)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            url = urllib.parse.urlsplit(self.creds.server)
            if url.scheme == "http":
                self._conn = http.client.HTTPConnection(url.hostname or "", url.port or 80, timeout=self.timeout)
            else:
                if self._ctx is None:
                    self._ctx = self.creds.ssl_context()
                self._conn = http.client.HTTPSConnection(url.hostname or "", url.port or 443,
                                                         timeout=self.timeout, context=self._ctx)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, verb: str, method: str, path: str, *, query: dict[str, str] | None = None,
                body: Any = None, content_type: str = "application/json", accept: str = "application/json",
                ) -> Manifest:
        with self._turn:
            return self._request(verb, method, path, query, body, content_type, accept)

    def _request(self, verb: str, method: str, path: str, query: dict[str, str] | None, body: Any,
                 content_type: str, accept: str) -> Manifest:
        self.counts[verb] += 1
        base_path = urllib.parse.urlsplit(self.creds.server).path.rstrip("/")
        url = base_path + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Accept": accept, "User-Agent": self.user_agent, **self.creds.headers()}
        if payload is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            if verb not in READ_VERBS and (refused := write_fence.refusal()) is not None:
                raise KubeError(0, refused)
            conn = self._connection()
            try:
                conn.request(method, url, body=payload, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, ssl.SSLEOFError):
                # A kept-alive connection the server closed; one fresh attempt.
                self.close()
                if attempt == 2:
                    raise
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            text = raw[:200].decode(errors="replace").strip()
            raise KubeError(response.status, f"{method} {path}: not a JSON answer: {text}", {}) from None
        if response.status >= 400:
            raise KubeError(response.status, data.get("message", raw[:200].decode(errors="replace")), data)
        return data

    # --- verbs ---------------------------------------------------------------------------------
    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Manifest | None:
        try:
            return self.request("get", "GET", resource_path(api_version, kind, namespace, name))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, namespace: str | None, selector: str = "", *,
             metadata_only: bool = False) -> list[Manifest]:
        """`metadata_only` asks the server for PartialObjectMetadata: Secrets listed this way never
        bring their data into this process."""
        query = {"labelSelector": selector} if selector else None
        accept = METADATA_LIST_ACCEPT if metadata_only else "application/json"
        data = self.request("list", "GET", resource_path(api_version, kind, namespace), query=query, accept=accept)
        items = data.get("items") or []
        for item in items:  # list items come without apiVersion/kind; metadata-only ones as PartialObjectMetadata
            item["apiVersion"], item["kind"] = api_version, kind
        return items

    @staticmethod
    def _write_query(dry_run: bool, **extra: str) -> dict[str, str]:
        query = dict(extra)
        if dry_run:
            query["dryRun"] = "All"
        return query

    def apply(self, obj: Manifest, field_manager: str, *, dry_run: bool = False, subresource: str | None = None,
              force: bool = True) -> Manifest:
        md = obj["metadata"]
        path = resource_path(obj["apiVersion"], obj["kind"], md.get("namespace"), md["name"], subresource)
        query = self._write_query(dry_run, fieldManager=field_manager, force=str(force).lower())
        return self.request("apply", "PATCH", path, query=query, body=obj,
                            content_type="application/apply-patch+yaml")

    def merge_patch(self, api_version: str, kind: str, namespace: str | None, name: str, body: Manifest, *,
                    field_manager: str, dry_run: bool = False, subresource: str | None = None) -> Manifest:
        path = resource_path(api_version, kind, namespace, name, subresource)
        return self.request("patch", "PATCH", path, query=self._write_query(dry_run, fieldManager=field_manager),
                            body=body, content_type="application/merge-patch+json")

    def json_patch(self, api_version: str, kind: str, namespace: str | None, name: str, ops: Sequence[Manifest], *,
                   field_manager: str, dry_run: bool = False) -> Manifest:
        path = resource_path(api_version, kind, namespace, name)
        return self.request("patch", "PATCH", path, query=self._write_query(dry_run, fieldManager=field_manager),
                            body=ops, content_type="application/json-patch+json")

    def create(self, obj: Manifest, *, field_manager: str, dry_run: bool = False) -> Manifest:
        md = obj["metadata"]
        path = resource_path(obj["apiVersion"], obj["kind"], md.get("namespace"))
        return self.request("create", "POST", path, query=self._write_query(dry_run, fieldManager=field_manager),
                            body=obj)

    def replace(self, obj: Manifest, *, field_manager: str) -> Manifest:
        """PUT: a compare-and-swap when `obj` carries the resourceVersion it was read at (409 if it moved)."""
        md = obj["metadata"]
        path = resource_path(obj["apiVersion"], obj["kind"], md.get("namespace"), md["name"])
        return self.request("replace", "PUT", path, query={"fieldManager": field_manager}, body=obj)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str, *, uid: str | None = None,
               resource_version: str | None = None, dry_run: bool = False) -> Manifest | None:
        """Delete only the object we looked at: a recreated object (new uid) or a changed one
        (new resourceVersion) makes the server answer 409 instead of deleting it."""
        body: Manifest = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            body["preconditions"] = pre
        if dry_run:
            body["dryRun"] = ["All"]
        try:
            return self.request("delete", "DELETE", resource_path(api_version, kind, namespace, name), body=body)
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise


def connect(kubeconfig: str | None = None, context: str | None = None, *, timeout: float = 30.0) -> KubeClient:
    return KubeClient(load_credentials(kubeconfig, context), timeout=timeout)
