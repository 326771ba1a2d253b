"""List+watch of one kind in one namespace (or all), keeping a store of the objects: an informer.

The one watch layer of the runtime: the operator's caches and the agent's two watches (pool pods,
MultigresShards) both run on it. Why our own rather than kopf (docs/dependencies.md): the operator
plans from these stores, so it must know when a store holds a complete list (kopf has no "initial
list done" signal per resource), one stream per kind must serve both the cache and the reconcile
triggers, and the agent needs nothing else kopf brings. The protocol is the apiserver's: a paginated
list gives a resourceVersion, the watch continues from it with bookmarks, and a 410 Gone (history
compacted) means list again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import aiohttp
from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import (
    METADATA_LIST_ACCEPT,
    Credentials,
    KubeError,
    resource_path,
)

log = logging.getLogger(__name__)
ObjKey = tuple[str, str]  # (namespace, name)
# The watch events of a metadata-only watch carry PartialObjectMetadata.
METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PAGE = 500
OPTIONAL_RETRY_S = 300.0  # an optional kind we may not list: RBAC rarely changes
MISSING_RETRY_S = 30.0  # an optional kind the server does not serve yet: a CRD applied after us


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    selector: str = ""
    metadata_only: bool = False
    # Top-level fields kept besides metadata (empty: all). A Node's status (images, conditions) is
    # most of its size and nothing the planner reads.
    keep: tuple[str, ...] = ()
    # Without the RBAC to list it, or before its CRD exists, the caller still runs: the store stays
    # empty, with a warning, and the list is tried again.
    optional: bool = False


class AsyncKube:
    """GET and watch over aiohttp with the engine's credentials (kube.load_credentials)."""

    def __init__(self, creds: Credentials) -> None:
        self.creds = creds
        self._session: aiohttp.ClientSession | None = None

    async def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            https = urllib.parse.urlsplit(self.creds.server).scheme == "https"
            ctx: ssl.SSLContext | bool = self.creds.ssl_context() if https else False
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _url(self, path: str) -> str:
        return self.creds.server + path

    async def get(self, path: str, query: dict[str, str], accept: str = "application/json") -> Manifest:
        session = await self.session()
        headers = {"Accept": accept, **self.creds.headers()}
        timeout = aiohttp.ClientTimeout(total=60)
        async with session.get(self._url(path), params=query, headers=headers, timeout=timeout) as resp:
            body = await resp.read()
            data = json.loads(body) if body else {}
            if resp.status >= 400:
                raise KubeError(resp.status, str(data.get("message", body[:200])), data)
            return data

    async def watch(self, path: str, query: dict[str, str], accept: str) -> AsyncIterator[Manifest]:
        session = await self.session()
        headers = {"Accept": accept, **self.creds.headers()}
        server_timeout = float(query.get("timeoutSeconds", "300"))
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=server_timeout + 30)
        async with session.get(self._url(path), params={**query, "watch": "1"}, headers=headers,
                               timeout=timeout) as resp:
            if resp.status == 410:
                raise Gone()
            if resp.status >= 400:
                body = await resp.read()
                raise KubeError(resp.status, body[:200].decode(errors="replace"))
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)


def strip(obj: Manifest, kind: Kind) -> Manifest:
    """What the store keeps: managedFields dropped (the planner never reads them and they are a
    large share of every object), apiVersion/kind set as a plain list would give them."""
    meta = obj.get("metadata") or {}
    if "managedFields" in meta:
        obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    if kind.keep:
        obj = {k: v for k, v in obj.items() if k == "metadata" or k in kind.keep}
    obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
    return obj


def key_of(obj: Manifest) -> ObjKey:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


# on_event(event type, new object, old object): type is ADDED, MODIFIED or DELETED.
EventHandler = Callable[[str, Manifest, Manifest | None], None]


@dataclass(eq=False)
class Informer:
    api: AsyncKube
    kind: Kind
    namespace: str | None  # None: every namespace
    on_event: EventHandler
    store: dict[ObjKey, Manifest] = field(default_factory=dict)
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    resource_version: str = ""
    relists: int = 0

    @property
    def path(self) -> str:
        return resource_path(self.kind.api_version, self.kind.kind, self.namespace)

    def _accept(self, watching: bool) -> str:
        if not self.kind.metadata_only:
            return "application/json"
        return METADATA_WATCH_ACCEPT if watching else METADATA_LIST_ACCEPT

    def _query(self) -> dict[str, str]:
        return {"labelSelector": self.kind.selector} if self.kind.selector else {}

    async def run(self) -> None:
        delay = 1.0
        while True:
            try:
                await self.list_all()
                delay = 1.0
                while True:
                    await self.watch_once()
            except Gone:
                log.info("%s watch expired (410); listing again", self.kind.kind)
            except asyncio.CancelledError:
                raise
            except KubeError as exc:
                if self.kind.optional and exc.status in (403, 404):
                    retry = OPTIONAL_RETRY_S if exc.status == 403 else MISSING_RETRY_S
                    if not self.synced.is_set():
                        why = "not allowed to list them" if exc.status == 403 else "no such resource (CRD missing?)"
                        log.warning("%s: %s (%s); going on without them, asking again every %.0fs",
                                    self.kind.kind, why, exc, retry)
                    self.synced.set()  # an empty store is what we may know: do not hold the caller back
                    await asyncio.sleep(retry)
                    continue
                log.warning("%s watch failed (%s); listing again in %.0fs", self.kind.kind, exc, delay)
                await asyncio.sleep(delay)
                delay = min(30.0, delay * 2)
            except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
                log.warning("%s watch failed (%s); listing again in %.0fs", self.kind.kind, exc, delay)
                await asyncio.sleep(delay)
                delay = min(30.0, delay * 2)

    async def list_all(self) -> None:
        fresh: dict[ObjKey, Manifest] = {}
        query = {**self._query(), "limit": str(PAGE)}
        while True:
            data = await self.api.get(self.path, query, self._accept(False))
            for item in data.get("items") or []:
                obj = strip(item, self.kind)
                fresh[key_of(obj)] = obj
            cont = (data.get("metadata") or {}).get("continue")
            if not cont:
                break
            query = {**query, "continue": cont}
        self.resource_version = (data.get("metadata") or {}).get("resourceVersion", "")
        old, self.store = self.store, fresh
        self.relists += 1
        # A relist after a gap tells the handler what changed meanwhile, as the watch would have.
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None or before.get("metadata", {}).get("resourceVersion") != obj["metadata"].get(
                    "resourceVersion"):
                self.on_event("ADDED" if before is None else "MODIFIED", obj, before)
        for key in old.keys() - fresh.keys():
            self.on_event("DELETED", old[key], old[key])
        self.synced.set()

    async def watch_once(self) -> None:
        """One watch request from the last resourceVersion, until the server ends it."""
        query = {**self._query(), "resourceVersion": self.resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(random.randint(240, 360))}
        async for event in self.api.watch(self.path, query, self._accept(True)):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone()
                raise KubeError(int(obj.get("code") or 500), str(obj.get("message", "watch error")), obj)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            if kind == "BOOKMARK":
                continue
            obj = strip(obj, self.kind)
            key = key_of(obj)
            before = self.store.get(key)
            if kind == "DELETED":
                self.store.pop(key, None)
            else:
                self.store[key] = obj
            self.on_event(str(kind), obj, before)
