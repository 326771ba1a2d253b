"""Buildah, the OCI builder: our own storage (vfs, under the image cache, so nothing touches the
machine's container storage), chroot isolation for RUN steps (root, no user namespaces needed)."""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from multigres_pools.images.steps import ImageBuildError, run

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ArchiveFacts:
    """What an OCI archive holds: the manifest digest a registry will show, and sizes."""
    digest: str
    compressed_bytes: int  # config plus layers as stored (what a pull transfers)


@dataclass(frozen=True)
class Buildah:
    root: Path
    runroot: Path

    def _argv(self, *args: str) -> list[str]:
        return ["buildah", "--root", str(self.root), "--runroot", str(self.runroot), "--storage-driver", "vfs", *args]

    def _run(self, step: str, *args: str, log: Path, cwd: Path | None = None) -> str:
        return run(self._argv(*args), step, log=log, cwd=cwd)

    def import_rootfs(self, tar: Path, ref: str, log: Path) -> None:
        """A one-layer image of the root filesystem in `tar`, tagged `ref`."""
        container = self._run(f"buildah from scratch ({ref})", "from", "scratch", log=log).strip().splitlines()[-1]
        try:
            self._run(f"add {tar.name}", "add", container, str(tar), "/", log=log)
            self._run("config", "config", "--env", PATH_ENV, "--cmd", '["bash"]', container, log=log)
            self._run(f"commit {ref}", "commit", "--quiet", container, ref, log=log)
        finally:
            self._run("remove the working container", "rm", container, log=log)

    def bud(self, containerfile: Path, context: Path, ref: str, build_args: dict[str, str], log: Path) -> None:
        args = [f"--build-arg={k}={v}" for k, v in sorted(build_args.items())]
        self._run(f"build {ref}", "bud", "--isolation", "chroot", "--layers=false", "--pull=false", "--no-cache",
                  "-f", str(containerfile), "-t", ref, *args, str(context), log=log)

    def push_archive(self, ref: str, archive: Path, name: str, log: Path) -> None:
        """Write `ref` as an OCI archive whose one image is called `name` (what `ctr images import`,
        `podman load` and `skopeo copy oci-archive:` read)."""
        self._run(f"write {archive.name}", "push", "--quiet", ref, f"oci-archive:{archive}:{name}", log=log)

    def tag(self, ref: str, name: str, log: Path) -> None:
        self._run(f"tag {name}", "tag", ref, name, log=log)

    def packages(self, ref: str, log: Path) -> str:
        """The Debian packages inside image `ref`, `name version` a line."""
        container = self._run("inspect packages", "from", "--quiet", "--pull=false", ref, log=log).split()[-1]
        try:
            return run(self._argv("run", "--isolation", "chroot", "--user", "0:0", container, "--", "dpkg-query",
                                  "-W", "-f", "${Package} ${Version}\\n"), "list packages")
        finally:
            self._run("remove the working container", "rm", container, log=log)

    def exists(self, ref: str) -> bool:
        try:
            run(self._argv("inspect", "--type", "image", "--format", "{{.FromImageID}}", ref), "inspect")
        except ImageBuildError:
            return False
        return True

    def remove(self, ref: str, log: Path) -> None:
        if self.exists(ref):
            self._run(f"remove {ref}", "rmi", ref, log=log)


@dataclass(frozen=True)
class ArchiveImage:
    """The one image in an OCI archive: its manifest's digest, the manifest and the image config."""
    digest: str
    manifest: dict[str, Any]
    config: dict[str, Any]


def read_archive(archive: Path) -> ArchiveImage:
    with tarfile.open(archive) as tar:
        def blob(name: str) -> Any:
            member = tar.extractfile(name)
            if member is None:
                raise ImageBuildError(f"{archive}: {name} is missing")
            return json.load(member)

        (manifest_ref,) = blob("index.json")["manifests"]
        manifest = blob("blobs/" + manifest_ref["digest"].replace(":", "/"))
        config = blob("blobs/" + manifest["config"]["digest"].replace(":", "/"))
    return ArchiveImage(manifest_ref["digest"], manifest, config)


def archive_facts(archive: Path) -> ArchiveFacts:
    """The manifest digest and stored size of the one image in an OCI archive."""
    image = read_archive(archive)
    size = image.manifest["config"]["size"] + sum(layer["size"] for layer in image.manifest["layers"])
    return ArchiveFacts(digest=image.digest, compressed_bytes=size)
