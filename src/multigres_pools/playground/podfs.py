"""Pod volumes for the process kubelet, materialised as host directories that `podexec` binds at the
containers' mountPaths.

- persistentVolumeClaim: `<workdir>/pvc/<ns>/<claim>`, which outlives the pod (a recreated pod with
  the same claim finds its data); a Pending claim is marked Bound first, as a volume binder would.
  The directory belongs to one claim (its uid, kept beside it in `.<claim>.uid`): a new claim of the
  same name gets it empty, as a dynamic provisioner gives a new claim a new volume.
- emptyDir: `<pod dir>/volumes/<name>`, removed with the pod.
- configMap, secret, downwardAPI and projected (of those three): files written from the API objects
  (items, keys, modes), rewritten in place when the objects change, as the kubelet refreshes them.
Everything is owned by the run-as user, which is what fsGroup gives a pod whose user is not root.
Anything else (hostPath, CSI, service-account tokens, ...) raises VolumeError naming the volume.
"""

from __future__ import annotations

import base64
import os
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest

from . import claimfs
from .podenv import ConfigError, decode_secret, field_ref

DEFAULT_MODE = 0o644
FS_GROUP_READ = 0o440

_FILE_SOURCES = ("configMap", "secret", "downwardAPI", "projected")
_claiming = threading.Lock()  # pods sharing a claim start on threads of their own


class VolumeError(Exception):
    """A volume the process kubelet cannot provide yet (the kubelet's FailedMount): retried."""


class UnsupportedVolume(VolumeError):
    """A volume kind or option the process kubelet never provides."""


@dataclass(frozen=True)
class Reader:
    configmap: Callable[[str, str], Manifest | None]  # the whole object: data and binaryData
    secret: Callable[[str, str], Manifest | None]
    claim: Callable[[str, str], Manifest | None]
    bind_claim: Callable[[str, str], None]
    # Gives a claim's directory a filesystem of its own (claimfs) before any container binds it;
    # raises ValueError when the claim cannot have one. None: the claim is a plain directory.
    claim_filesystem: Callable[[Path, Manifest], None] | None = None


def _write_if_changed(path: Path, content: bytes, mode: int, uid: int, gid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != content:
        # In place, not rename: a single-file bind mount (subPath) keeps pointing at this inode.
        with path.open("wb") as handle:
            handle.write(content)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def _object_files(kind: str, spec: Manifest, obj: Manifest | None, where: str) -> dict[str, tuple[bytes, int | None]]:
    """relative path -> (content, mode or None for the default) for a configMap/secret source."""
    if obj is None:
        if spec.get("optional"):
            return {}
        raise VolumeError(f"{where}: {kind} {spec.get('secretName') or spec.get('name')!r} not found")
    if kind == "secret":
        data = {k: v.encode() for k, v in decode_secret(obj.get("data")).items()}
    else:
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    items = spec.get("items")
    if not items:
        return {k: (v, None) for k, v in data.items()}
    files = {}
    for item in items:
        if item["key"] not in data:
            if spec.get("optional"):
                continue
            raise VolumeError(f"{where}: key {item['key']!r} not found in {kind} "
                              f"{spec.get('secretName') or spec.get('name')!r}")
        files[item["path"]] = (data[item["key"]], item.get("mode"))
    return files


def _downward_files(pod: Manifest, spec: Manifest, where: str) -> dict[str, tuple[bytes, int | None]]:
    files = {}
    for item in spec.get("items") or []:
        if "fieldRef" not in item:
            raise UnsupportedVolume(f"{where}: item {item.get('path')!r}: only fieldRef is supported by the "
                                    "process kubelet")
        try:
            files[item["path"]] = (field_ref(pod, item["fieldRef"]["fieldPath"]).encode(), item.get("mode"))
        except ConfigError as err:
            raise VolumeError(f"{where}: {err}") from err
    return files


class PodVolumes:
    def __init__(self, pod: Manifest, pod_dir: Path, pvc_root: Path, uid: int, gid: int, reader: Reader) -> None:
        self.pod = pod
        self.namespace: str = pod["metadata"]["namespace"]
        self.dir = pod_dir / "volumes"
        self.pvc_root = pvc_root
        self.uid, self.gid = uid, gid
        self.reader = reader
        self.sources: dict[str, Path] = {}
        self._written: dict[str, set[str]] = {}

    def check_supported(self) -> None:
        """Raises VolumeError for a volume type the process kubelet cannot provide."""
        for volume in (self.pod.get("spec") or {}).get("volumes") or []:
            kind = self._kind(volume)
            if kind == "projected":
                for source in volume["projected"].get("sources") or []:
                    extra = sorted(set(source) - {"configMap", "secret", "downwardAPI"})
                    if extra:
                        raise UnsupportedVolume(f"volume {volume['name']!r}: projected source {extra[0]!r} is not "
                                          "supported by the process kubelet")

    @staticmethod
    def _kind(volume: Manifest) -> str:
        kinds = [k for k in volume if k != "name"]
        kind = kinds[0] if kinds else "emptyDir"
        if kind not in ("persistentVolumeClaim", "emptyDir", *_FILE_SOURCES):
            raise UnsupportedVolume(f"volume {volume['name']!r}: {kind} volumes are not supported by the process "
                                    "kubelet (only persistentVolumeClaim, emptyDir, configMap, secret, downwardAPI, "
                                    "projected)")
        return kind

    def prepare(self) -> None:
        """Creates or refreshes every volume; raises VolumeError when one cannot be provided yet."""
        self.check_supported()
        for volume in (self.pod.get("spec") or {}).get("volumes") or []:
            name, kind = volume["name"], self._kind(volume)
            if kind == "persistentVolumeClaim":
                self.sources[name] = self._claim(volume)
            elif kind == "emptyDir":
                self.sources[name] = self._empty_dir(name)
            else:
                self.sources[name] = self._files(volume, kind)

    def _claim(self, volume: Manifest) -> Path:
        claim: str = volume["persistentVolumeClaim"]["claimName"]
        pvc = self.reader.claim(self.namespace, claim)
        if pvc is None:
            raise VolumeError(f"volume {volume['name']!r}: persistentvolumeclaim {claim!r} not found")
        if ((pvc.get("status") or {}).get("phase") or "Pending") == "Pending":
            self.reader.bind_claim(self.namespace, claim)
        path = self.pvc_root / self.namespace / claim
        with _claiming:
            _owned_by(path, str((pvc.get("metadata") or {}).get("uid") or ""))
            if not path.is_dir():
                path.mkdir(parents=True)
                os.chown(path, self.uid, self.gid)
        if self.reader.claim_filesystem is not None:
            try:
                self.reader.claim_filesystem(path, pvc)
            except ValueError as exc:
                raise VolumeError(f"volume {volume['name']!r}: {exc}") from None
        return path

    def _empty_dir(self, name: str) -> Path:
        path = self.dir / name
        if not path.is_dir():
            path.mkdir(parents=True)
            os.chown(path, self.uid, self.gid)
        return path

    def _files(self, volume: Manifest, kind: str) -> Path:
        name, spec = volume["name"], volume[kind]
        where = f"volume {name!r}"
        files: dict[str, tuple[bytes, int | None]] = {}
        if kind == "secret":  # a secret volume says secretName where every other source says name
            spec = {**spec, "name": spec.get("secretName", "")}
        sources = (spec.get("sources") or []) if kind == "projected" else [{kind: spec}]
        for source in sources:
            (sub_kind, sub), = source.items()
            if sub_kind == "downwardAPI":
                files.update(_downward_files(self.pod, sub, where))
            else:
                read = self.reader.configmap if sub_kind == "configMap" else self.reader.secret
                # A secret volume names its object `secretName`; projected sources (and configMaps) say `name`.
                object_name = sub.get("secretName") or sub.get("name", "")
                files.update(_object_files(sub_kind, sub, read(self.namespace, object_name), where))
        path: Path = self.dir / name
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, self.uid, self.gid)
        default = spec.get("defaultMode", DEFAULT_MODE)
        # The kubelet writes these files as root. Under an fsGroup it gives them that group and adds group read
        # (0440, the mask of a read-only volume); without one they stay root:root, so a 0400 file is unreadable
        # to a non-root container. pgBackRest relies on the first: it refuses a key file its own user owns with
        # group bits set, and accepts one root owns.
        fs_group = (self.pod["spec"].get("securityContext") or {}).get("fsGroup") is not None
        group, extra_bits = (self.gid, FS_GROUP_READ) if fs_group else (0, 0)
        for rel, (content, mode) in files.items():
            if rel.startswith("/") or ".." in rel.split("/"):
                raise VolumeError(f"{where}: item path {rel!r} must be relative and stay inside the volume")
            _write_if_changed(path / rel, content, (default if mode is None else mode) | extra_bits, 0, group)
        for stale in self._written.get(name, set()) - set(files):
            (path / stale).unlink(missing_ok=True)
        self._written[name] = set(files)
        return path

    def mounts(self, container: Manifest) -> list[Manifest]:
        """podexec mount entries for the container's volumeMounts, shallowest first."""
        out = []
        for mount in container.get("volumeMounts") or []:
            where = f"container {container['name']!r} volumeMount {mount['name']!r}"
            if mount.get("subPathExpr"):
                raise UnsupportedVolume(f"{where}: subPathExpr is not supported by the process kubelet")
            if mount["name"] not in self.sources:
                raise VolumeError(f"{where}: no volume named {mount['name']!r}")
            source = self.sources[mount["name"]]
            sub = mount.get("subPath")
            if sub:
                if sub.startswith("/") or ".." in sub.split("/"):
                    raise VolumeError(f"{where}: subPath {sub!r} must be relative and stay inside the volume")
                source = source / sub
                if not source.exists():  # the kubelet creates a missing subPath as a directory
                    source.mkdir(parents=True)
                    os.chown(source, self.uid, self.gid)
            out.append({"source": str(source), "target": mount["mountPath"],
                        "readOnly": bool(mount.get("readOnly")), "file": source.is_file()})
        return sorted(out, key=lambda m: m["target"].rstrip("/").count("/"))

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def text_data(obj: Manifest | None, secret: bool) -> Mapping[str, str] | None:
    """What env lookups need: a ConfigMap's data or a Secret's decoded data."""
    if obj is None:
        return None
    return decode_secret(obj.get("data")) if secret else dict(obj.get("data") or {})


def _owned_by(path: Path, uid: str) -> None:
    """Record that the claim directory `path` is the volume of the claim `uid`; a directory left by an
    earlier claim of the same name (deleted since) is emptied first, its own filesystem unmounted."""
    marker = path.parent / f".{path.name}.uid"
    owner = marker.read_text() if marker.is_file() else None
    if owner == uid:
        return
    if owner is not None and path.exists():
        if os.path.ismount(path):
            claimfs.unmount(str(path))
        shutil.rmtree(path)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(uid)
