"""What a container is started with, computed as the kubelet does: environment (value, valueFrom,
envFrom), `$(VAR)` expansion, and the executable an image provides. Pure functions over pod dicts;
the API objects they need come in through `Lookup`."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ansible_collections.multigres.pools.plugins.module_utils.core.manifest import Manifest


class ConfigError(Exception):
    """The container cannot be configured (the kubelet's CreateContainerConfigError)."""


@dataclass(frozen=True)
class ImageSpec:
    """A local stand-in for a container image: executables are looked up by basename in `path_dirs`
    (never on the host PATH), `env` is the image's environment, `entrypoint`/`cmd` its ENTRYPOINT and
    CMD (used only when the container does not set `command`/`args`), `files` host files that appear
    at their paths in the image (a script may name `/usr/local/bin/pgctld`, as it would in the image)."""

    path_dirs: list[str]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Lookup:
    """Reads of ConfigMaps and Secrets (data already decoded to text); None when the object is absent."""

    configmap: Callable[[str, str], Mapping[str, str] | None]
    secret: Callable[[str, str], Mapping[str, str] | None]


_REF = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: defined variables are substituted, `$$` escapes `$`, and an
    undefined reference is left as written."""
    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _REF.sub(sub, text)


def decode_secret(data: Mapping[str, str] | None) -> dict[str, str]:
    return {k: base64.b64decode(v).decode(errors="replace") for k, v in (data or {}).items()}


_FIELD_PATH = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def field_ref(pod: Manifest, path: str) -> str:
    """The downward API's fieldRef paths the kubelet resolves."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"), "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(i["ip"] for i in status.get("podIPs") or []),
        "status.hostIPs": ",".join(i["ip"] for i in status.get("hostIPs") or []),
    }
    if path in simple:
        return str(simple[path] or "")
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "".join(f'{k}="{v}"\n' for k, v in sorted(values.items()))
    match = _FIELD_PATH.fullmatch(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ConfigError(f"fieldRef.fieldPath {path!r} is not supported by the process kubelet")


def _key_ref(kind: str, ref: Manifest, namespace: str, lookup: Lookup, where: str) -> str | None:
    read = lookup.configmap if kind == "configMap" else lookup.secret
    data = read(namespace, ref.get("name", ""))
    optional = bool(ref.get("optional"))
    if data is None:
        if optional:
            return None
        raise ConfigError(f"{where}: {kind} {ref.get('name')!r} not found")
    if ref.get("key") not in data:
        if optional:
            return None
        raise ConfigError(f"{where}: key {ref.get('key')!r} not found in {kind} {ref.get('name')!r}")
    return data[ref["key"]]


def container_env(pod: Manifest, container: Manifest, lookup: Lookup) -> dict[str, str]:
    """The variables the container spec defines (envFrom first, then env in order, each value
    expanded against those defined before it), as the kubelet builds them."""
    namespace = pod["metadata"]["namespace"]
    env: dict[str, str] = {}
    name = container.get("name")
    for i, source in enumerate(container.get("envFrom") or []):
        kind = "configMap" if "configMapRef" in source else "secret" if "secretRef" in source else None
        if kind is None:
            raise ConfigError(f"container {name!r} envFrom[{i}]: only configMapRef and secretRef are supported")
        ref = source[f"{kind}Ref"]
        data = (lookup.configmap if kind == "configMap" else lookup.secret)(namespace, ref.get("name", ""))
        if data is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f"container {name!r} envFrom[{i}]: {kind} {ref.get('name')!r} not found")
        env.update({f"{source.get('prefix', '')}{k}": v for k, v in data.items()})
    for var in container.get("env") or []:
        where = f"container {name!r} env {var['name']!r}"
        if "valueFrom" not in var:
            env[var["name"]] = expand(var.get("value", ""), env)
            continue
        source = var["valueFrom"]
        if "fieldRef" in source:
            value: str | None = field_ref(pod, source["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in source:
            value = _key_ref("configMap", source["configMapKeyRef"], namespace, lookup, where)
        elif "secretKeyRef" in source:
            value = _key_ref("secret", source["secretKeyRef"], namespace, lookup, where)
        else:
            raise ConfigError(f"{where}: valueFrom {sorted(source)} is not supported by the process kubelet")
        if value is not None:
            env[var["name"]] = value
    return env


def command_line(container: Manifest, image: ImageSpec, env: Mapping[str, str]) -> list[str]:
    """command+args with the image's ENTRYPOINT/CMD filling what the container leaves unset, expanded."""
    command, args = container.get("command"), container.get("args")
    argv = [*command, *(args or [])] if command else [*image.entrypoint, *(args or image.cmd)]
    if not argv:
        raise ConfigError(f"container {container.get('name')!r}: no command, and image has no entrypoint")
    return [expand(a, env) for a in argv]


def runnable_by(path: str, uid: int, gid: int) -> bool:
    """Whether `uid`/`gid` may execute `path`, asked of the kernel as that user (the caller is root,
    and ACLs such as the toolchain's on /root decide too, so mode bits alone would mislead)."""
    test = shutil.which("test") or "/usr/bin/test"
    try:
        return subprocess.run([test, "-x", path], user=uid, group=gid, extra_groups=[], check=False,
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_executable(name: str, image_ref: str, image: ImageSpec, uid: int, gid: int) -> str:
    """`name` by its basename in the image's directories; it must be executable by the run-as user."""
    base = os.path.basename(name)
    for directory in image.path_dirs:
        path = os.path.join(directory, base)
        if os.path.isfile(path):
            if not runnable_by(path, uid, gid):
                raise ConfigError(f"executable {path!r} of image {image_ref!r} is not executable by uid {uid}")
            return path
    raise ConfigError(f"executable {base!r} not found in image {image_ref!r} (looked in {', '.join(image.path_dirs)})")
