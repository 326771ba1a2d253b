"""`multigres-pools`: render shards, write the install bundle, or run the agent or the operator.

    multigres-pools render -f shard.yaml -o out/         CRs + preview folder (see docs/render.md)
    multigres-pools render -d inventory/ --stdout --only crs   what the ArgoCD plugin runs
    multigres-pools install-bundle -o manifests/         CRD, RBAC, Deployments, kustomization.yaml
    multigres-pools agent ... | operator ...             the long-running programs
    multigres-pools localstack up | down                 a shard on real Multigres v0.1.0 here
    multigres-pools status SHARD -n NS [-o json]         the incident screen of one shard

Invalid input goes to stderr with a non-zero exit, and nothing is written.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from ansible_collections.multigres.pools.plugins.module_utils import bundle, keys, output, render_folder
from ansible_collections.multigres.pools.plugins.module_utils.model import MultigresShard, SpecError

# Inventory vars files name shards under one of these keys (docs/gitops.md).
VARS_KEYS = ("multigres_shard", "multigres_shards")


class UsageError(Exception):
    pass


def _documents_in(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: {exc}") from None
    for number, doc in enumerate(docs):
        if doc is not None:
            yield f"{path}#{number}", doc


def _shard_documents(where: str, doc: Any) -> Iterator[tuple[str, Any]]:
    """A MultigresShard document as is, or the shards an inventory vars file lists."""
    if isinstance(doc, Mapping) and doc.get("kind") == keys.SHARD_KIND:
        yield where, doc
    elif isinstance(doc, Mapping) and any(k in doc for k in VARS_KEYS):
        single = [doc["multigres_shard"]] if "multigres_shard" in doc else []
        for i, shard in enumerate([*single, *doc.get("multigres_shards", [])]):
            yield f"{where}[{i}]", {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, **shard}
    elif isinstance(doc, Mapping) and doc.get("kind") is not None:
        return  # other Kubernetes objects in the same folder are not ours to render
    else:
        raise UsageError(f"{where}: not a MultigresShard document nor a vars file with {' or '.join(VARS_KEYS)}")


def _load(files: list[Path], dirs: list[Path], previous: Path | None) -> list[MultigresShard]:
    paths = list(files)
    for folder in dirs:
        if not folder.is_dir():
            raise UsageError(f"{folder}: not a directory")
        paths += sorted(p for p in folder.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())
    if not paths:
        raise UsageError("nothing to render: give -f FILE or -d DIR")
    prior = _previous_specs(previous) if previous else {}
    shards, problems = [], []
    for path in paths:
        for where, doc in (d for found in _documents_in(path) for d in _shard_documents(*found)):
            try:
                name = (doc.get("metadata") or {}).get("name")
                shards.append(render_folder.load_checked(doc, prior.get(name)))
            except SpecError as exc:
                problems += [f"{where}: {e}" for e in exc.errors]
    if problems:
        raise SpecError(problems)
    return shards


def _previous_specs(path: Path) -> dict[str, Any]:
    return {doc["metadata"]["name"]: doc["spec"] for _, doc in _documents_in(path)
            if isinstance(doc, Mapping) and doc.get("kind") == keys.SHARD_KIND}


def cmd_render(args: argparse.Namespace) -> int:
    shards = _load(args.file, args.dir, args.previous)
    files = render_folder.render_files(shards, args.namespace, "crs" if args.stdout else args.only)
    if args.stdout:
        # Only objects on stdout (the ArgoCD plugin contract), never the kustomization files.
        sys.stdout.write("".join(f"---\n{text}" for path, text in files.items()
                                 if not path.endswith("kustomization.yaml")))
    else:
        changed = output.write_folder(files, args.output)
        print(f"{args.output}: {len(files)} files, {len(changed)} changed", file=sys.stderr)
    return 0


def cmd_install_bundle(args: argparse.Namespace) -> int:
    changed = output.write_folder(bundle.files(args.image), args.output)
    print(f"{args.output}: install bundle, {len(changed)} files changed", file=sys.stderr)
    return 0


# Commands whose options their own program parses; each is imported only when used.
DELEGATES = {
    "agent": "multigres_pools.agent.__main__",
    "operator": "multigres_pools.operator.__main__",
    "localstack": "multigres_pools.playground.localstack_cli",
    "status": "multigres_pools.report",
}
DELEGATE_HELP = {
    "agent": "run the agent",
    "operator": "run the operator",
    "localstack": "a shard on real Multigres v0.1.0 on this machine (up | down)",
    "status": "one screen for an incident: pods, roles, drains, the synchronous set, backups, what is blocked",
}


def _delegate(command: str, argv: list[str]) -> int:
    """Hand everything after the command to the program's own parser."""
    return int(importlib.import_module(DELEGATES[command]).main(argv) or 0)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="multigres-pools", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("render", help="validate MultigresShards and write CRs plus a preview of their objects")
    r.add_argument("-f", "--file", type=Path, action="append", default=[], help="MultigresShard or vars file")
    r.add_argument("-d", "--dir", type=Path, action="append", default=[], help="folder of such files")
    where = r.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", type=Path, help="folder to write (kustomize-ready)")
    where.add_argument("--stdout", action="store_true", help="print the MultigresShard CRs (ArgoCD plugin)")
    r.add_argument("--only", choices=("all", "crs", "preview"), default="all", help="what to write with -o")
    r.add_argument("-n", "--namespace", default="default", help="namespace for shards that name none")
    r.add_argument("--previous", type=Path, help="the live MultigresShards: also check update rules")
    r.set_defaults(run=cmd_render)

    b = sub.add_parser("install-bundle", help="write the CRD, RBAC and Deployments")
    b.add_argument("-o", "--output", type=Path, required=True)
    b.add_argument("--image", default=bundle.DEFAULT_IMAGE, help="image of the operator and the agent")
    b.set_defaults(run=cmd_install_bundle)

    for name in DELEGATES:  # listed for --help; main() dispatches them before parsing
        sub.add_parser(name, help=f"{DELEGATE_HELP[name]} (options: multigres-pools {name} --help)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in DELEGATES:
        return _delegate(argv[0], argv[1:])
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as exc:
        print(f"multigres-pools: {exc}", file=sys.stderr)
    except (UsageError, ValueError, OSError) as exc:
        print(f"multigres-pools: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
