"""`multigres-pools`: render shards, write the install bundle, or run the agent or the operator.

    multigres-pools render -f shard.yaml -o out/         CRs + preview folder (see docs/render.md)
    multigres-pools render -d inventory/ --stdout --only crs   what the ArgoCD plugin runs
    multigres-pools install-bundle -o manifests/         CRD, RBAC, Deployments, kustomization.yaml
    multigres-pools install-bundle -o out/ --watch-namespace db --watch-namespace db2   # or --cluster-wide
    multigres-pools agent ... | operator ...             the long-running programs
    multigres-pools localstack up | down                 a shard on real Multigres v0.1.0 here
    multigres-pools status SHARD -n NS [-o json]         the incident screen of one shard
    multigres-pools switchover SHARD -n NS               move the primary away now
    multigres-pools completion bash | zsh                shell completion script

Errors go to stderr, each naming its source (file#document, field path), and nothing is written.
Exit codes: 0 done; 1 a MultigresShard breaks a rule of the API (invalid spec or update);
2 the command or its input cannot be used as given (arguments, unreadable or oversized files, YAML
errors, input limits, documents that are not MultigresShards); 3 a bug (the message names a file
with the traceback); 130 interrupted (Ctrl-C); 141 stdout closed early (`| head`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from ansible_collections.multigres.pools.plugins.module_utils.core import keys
from ansible_collections.multigres.pools.plugins.module_utils.render import folder as render_folder
from ansible_collections.multigres.pools.plugins.module_utils.render import output
from ansible_collections.multigres.pools.plugins.module_utils.spec import inputs
from ansible_collections.multigres.pools.plugins.module_utils.spec.model import (
    DnsLabel,
    Image,
    MultigresShard,
    SpecError,
    value_problem,
)
from ansible_collections.multigres.pools.plugins.module_utils.spec.policy import SpecPolicy, parse_list
from ansible_collections.multigres.pools.plugins.module_utils.spec.security import ObjectName

from multigres_pools.install import bundle

from . import cli_guard, cli_help
from .version import version

# Inventory vars files name shards under one of these keys (docs/gitops.md).
VARS_KEYS = ("multigres_shard", "multigres_shards")
EXIT_INVALID, EXIT_USAGE = 1, 2


class UsageError(Exception):
    pass


def _documents_in(path: Path) -> list[tuple[str, Any]]:
    try:
        if path.stat().st_size > inputs.MAX_DOCUMENT_BYTES:  # before reading it all
            raise UsageError(f"{path}: larger than {inputs.MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    return inputs.load_yaml(data, str(path))


def _type(value: Any) -> str:
    """`a list`, `an integer`...: the YAML name of a value's type, for messages."""
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _vars_entries(where: str, doc: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if "multigres_shard" in doc:
        yield f"{where}: multigres_shard", doc["multigres_shard"]
    if "multigres_shards" in doc:
        listed = doc["multigres_shards"]
        if not isinstance(listed, list):
            raise UsageError(f"{where}: multigres_shards: expected a list of {{metadata, spec}}, got "
                             f"{_type(listed)} (write [] for none)")
        for i, shard in enumerate(listed):
            yield f"{where}: multigres_shards[{i}]", shard


def _other_kind(where: str, doc: Mapping[str, Any], allow_other_kinds: bool) -> None:
    """A Kubernetes object that is not a MultigresShard: an error unless other kinds are allowed.
    Dropping it silently would let a typo in `kind:` delete a live shard under GitOps pruning."""
    kind, api = repr(doc.get("kind"))[:80], doc.get("apiVersion")
    ours = isinstance(api, str) and api.split("/")[0] == keys.API_GROUP
    if ours or "multigres" in kind.lower():
        raise UsageError(f"{where}: kind {kind} (apiVersion {repr(api)[:80]}) is not {keys.SHARD_KIND} "
                         f"({keys.API_GROUP_VERSION}); a misspelt shard would be left out of the output")
    if not allow_other_kinds:
        raise UsageError(f"{where}: kind {kind} is not a {keys.SHARD_KIND}; leaving it out silently could "
                         "prune it (or a misspelt shard) under GitOps. Move it out of the input, or pass "
                         "--allow-other-kinds to skip other Kubernetes objects")
    print(f"multigres-pools: {where}: skipped {doc.get('kind')} (--allow-other-kinds)", file=sys.stderr)


def _shard_documents(where: str, doc: Any, allow_other_kinds: bool) -> Iterator[tuple[str, Any]]:
    """A MultigresShard document as is, or the shards an inventory vars file lists."""
    if not isinstance(doc, Mapping):
        raise UsageError(f"{where}: {_type(doc)} is not a MultigresShard document nor a vars file with "
                         f"{' or '.join(VARS_KEYS)}")
    if doc.get("kind") == keys.SHARD_KIND:
        yield where, doc
    elif any(k in doc for k in VARS_KEYS):
        for entry_where, shard in _vars_entries(where, doc):
            if not isinstance(shard, Mapping):
                raise UsageError(f"{entry_where}: expected a mapping with metadata and spec, got {_type(shard)}")
            yield entry_where, {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, **shard}
    elif doc.get("kind") is not None:
        _other_kind(where, doc, allow_other_kinds)
    else:
        raise UsageError(f"{where}: not a MultigresShard document (no kind) nor a vars file with "
                         f"{' or '.join(VARS_KEYS)}")


def _input_paths(files: list[Path], dirs: list[Path]) -> list[Path]:
    paths = list(files)
    for folder in dirs:
        if not folder.is_dir():
            raise UsageError(f"{folder}: not a directory")
        paths += sorted(p for p in folder.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())
    if not paths:
        raise UsageError(f"{', '.join(map(str, dirs))}: no .yaml or .yml file in it" if dirs
                         else "nothing to render: give -f FILE or -d DIR")
    return paths


def _load(args: argparse.Namespace) -> list[MultigresShard]:
    prior = _previous_specs(args.previous, args.namespace) if args.previous else {}
    named: list[tuple[str, MultigresShard]] = []
    problems: list[str] = []
    for path in _input_paths(args.file, args.dir):
        documents = _documents_in(path)
        if not documents and path in args.file:  # in a -d folder an empty file may be a placeholder
            raise UsageError(f"{path}: no YAML document in it (empty, only comments, or null)")
        for found in documents:
            for where, doc in _shard_documents(*found, args.allow_other_kinds):
                inputs.check_data(doc, where)
                key = _key(doc, args.namespace)
                previous_where, previous = prior.get(key, (None, None)) if key is not None else (None, None)
                try:
                    named.append((where, render_folder.load_checked(doc, previous, f"{previous_where}: spec")))
                except SpecError as exc:
                    problems += [f"{where}: {e}" for e in exc.errors]
    if problems:
        raise SpecError(problems)
    duplicates = render_folder.duplicate_names(named)
    if duplicates:
        raise UsageError("\n".join(duplicates))
    return [shard for _, shard in named]


def _previous_specs(path: Path, default_namespace: str) -> dict[tuple[str, str], tuple[str, Any]]:
    """The live shards by (namespace, name): MultigresShard documents, or the List `kubectl get -o yaml`
    prints. Anything else is an error: a shard missing here would skip its update rules silently."""
    prior: dict[tuple[str, str], tuple[str, Any]] = {}
    for where, doc in _documents_in(path):
        items = doc.get("items") if isinstance(doc, Mapping) and doc.get("kind") == "List" else None
        found = [(f"{where}: items[{i}]", item) for i, item in enumerate(items)] if isinstance(items, list) \
            else [(where, doc)]
        for item_where, item in found:
            key = _key(item, default_namespace)
            if key is None or item.get("kind") != keys.SHARD_KIND:
                raise UsageError(f"{item_where}: --previous takes MultigresShards with metadata.name (or the "
                                 "List `kubectl get mgs -o yaml` prints)")
            prior[key] = (item_where, item.get("spec"))
    return prior


def _key(doc: Any, default_namespace: str) -> tuple[str, str] | None:
    """(namespace, name) of a document not validated yet; None without a string name."""
    name = render_folder.shard_name(doc)
    if name is None:
        return None
    namespace = doc["metadata"].get("namespace")
    return (namespace if isinstance(namespace, str) and namespace else default_namespace), name


def _check(value: Any, type_: Any, what: str) -> None:
    problem = value_problem(type_, value)
    if problem:
        raise UsageError(f"{what} {value!r}: {problem}")


def cmd_render(args: argparse.Namespace) -> int:
    _check(args.namespace, DnsLabel, "--namespace")
    shards = _load(args)
    files = render_folder.render_files(shards, args.namespace, "crs" if args.stdout else args.only)
    if args.stdout:
        # Only objects on stdout (the ArgoCD plugin contract), never the kustomization files.
        sys.stdout.write("".join(f"---\n{text}" for path, text in files.items()
                                 if not path.endswith("kustomization.yaml")))
    else:
        changed = output.write_folder(files, args.output)
        print(f"{args.output}: {len(files)} files, {len(changed)} changed", file=sys.stderr)
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from . import completion

    sys.stdout.write(completion.script(args.shell))
    return 0


def cmd_install_bundle(args: argparse.Namespace) -> int:
    _check(args.image, Image, "--image")
    for ns in args.watch_namespace:
        _check(ns, DnsLabel, "--watch-namespace")
    if args.cluster_wide and args.watch_namespace:
        raise UsageError("--cluster-wide watches every namespace: leave out --watch-namespace")
    namespaces = tuple(args.watch_namespace) or bundle.DEFAULT_WATCH_NAMESPACES
    policy = SpecPolicy(parse_list(args.allowed_images), parse_list(args.allowed_service_accounts),
                        parse_list(args.allowed_secrets))
    if args.agent_grpc_tls_secret:
        _check(args.agent_grpc_tls_secret, ObjectName, "--agent-grpc-tls-secret")
    changed = output.write_folder(bundle.files(args.image, namespaces, cluster_wide=args.cluster_wide, policy=policy,
                                               agent_grpc_tls_secret=args.agent_grpc_tls_secret), args.output)
    print(f"{args.output}: install bundle, {len(changed)} files changed", file=sys.stderr)
    return 0


# Commands whose options their own program parses; each is imported only when used.
DELEGATES = {
    "agent": "multigres_pools.agent.__main__",
    "operator": "multigres_pools.operator.__main__",
    "localstack": "multigres_pools.playground.localstack_cli",
    "status": "multigres_pools.report.command",
    "switchover": "multigres_pools.switchover_command",
}
DELEGATE_HELP = {
    "agent": "run the agent",
    "operator": "run the operator",
    "localstack": "a shard on real Multigres v0.1.0 on this machine (up | down)",
    "status": "one screen for an incident: healthy or what is wrong, pods, replication, backups",
    "switchover": "move the primary away now and wait until another pod is the primary",
}


def _delegate(command: str, argv: list[str]) -> int:
    """Hand everything after the command to the program's own parser."""
    return int(importlib.import_module(DELEGATES[command]).main(argv) or 0)


EXAMPLES = {
    "": cli_help.examples(
        "multigres-pools render -f shard.yaml -o out/",
        "multigres-pools install-bundle -o manifests/ && kubectl apply -k manifests/",
        "multigres-pools status orders -n db",
        "multigres-pools COMMAND --help                         options and examples of one command",
        "source <(multigres-pools completion bash)"),
    "render": cli_help.examples(
        "multigres-pools render -f shard.yaml -o out/                 CRs and a preview of every object",
        "multigres-pools render -d inventory/ --stdout                 CRs only, for the ArgoCD plugin",
        "multigres-pools render -f shard.yaml -o out/ --only preview",
        "kubectl get mgs -n db -o yaml > live.yaml",
        "multigres-pools render -f shard.yaml -o out/ --previous live.yaml     also check the update rules"),
    "install-bundle": cli_help.examples(
        "multigres-pools install-bundle -o manifests/ && kubectl apply -k manifests/",
        "multigres-pools install-bundle -o /tmp/bundle --image registry.example.com/pools:0.1.0",
        "kubectl apply -k manifests/monitoring/                       ServiceMonitor and alerts (Prometheus Operator)"),
    "completion": cli_help.examples(
        "source <(multigres-pools completion bash)                    this shell only",
        "multigres-pools completion bash > ~/.local/share/bash-completion/completions/multigres-pools",
        'multigres-pools completion zsh > "${fpath[1]}/_multigres-pools"   then restart zsh'),
}


def _sub(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
         help_text: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".",
                          epilog=EXAMPLES[name], formatter_class=cli_help.HelpFormatter)


def parser() -> argparse.ArgumentParser:
    p = cli_help.parser("multigres-pools", __doc__.split("\n\n")[0], EXAMPLES[""])
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = _sub(sub, "render", "validate MultigresShards and write CRs plus a preview of their objects")
    r.add_argument("-f", "--file", type=Path, action="append", default=[],
                   help="MultigresShard or vars file (repeatable)")
    r.add_argument("-d", "--dir", type=Path, action="append", default=[],
                   help="folder of such files, read recursively (repeatable)")
    where = r.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", type=Path, help="folder to write (kustomize-ready)")
    where.add_argument("--stdout", action="store_true", help="print the MultigresShard CRs (ArgoCD plugin)")
    r.add_argument("--only", choices=("all", "crs", "preview"), default="all", help="what to write with -o")
    r.add_argument("-n", "--namespace", default="default", help="namespace for shards that name none")
    r.add_argument("--previous", type=Path, help="the live MultigresShards: also check update rules")
    r.add_argument("--allow-other-kinds", action="store_true",
                   help="skip (and list on stderr) Kubernetes objects that are not MultigresShards instead "
                        "of failing")
    r.set_defaults(run=cmd_render)

    b = _sub(sub, "install-bundle", "write the CRD, RBAC, Deployments, metrics Services and monitoring/")
    b.add_argument("-o", "--output", type=Path, required=True,
                   help="folder to write (kustomize-ready; stale *.yaml files in it are removed)")
    b.add_argument("--image", default=bundle.DEFAULT_IMAGE, help="image of the operator and the agent")
    watched = ", ".join(bundle.DEFAULT_WATCH_NAMESPACES)
    scope = b.add_argument_group(f"scope (default: namespaced, watching {watched})")
    scope.add_argument("--watch-namespace", action="append", default=[], metavar="NAMESPACE",
                       help="a namespace the operator and the agent watch, with a Role and RoleBinding each "
                            "(repeatable)")
    scope.add_argument("--cluster-wide", action="store_true",
                       help="watch every namespace, through ClusterRoles and ClusterRoleBindings")
    allow = b.add_argument_group("allow-lists of the operator (comma-separated, `*` ends a prefix; default: allow all)")
    for flag, what in (("--allowed-images", "images"), ("--allowed-service-accounts", "ServiceAccounts"),
                       ("--allowed-secrets", "Secrets")):
        allow.add_argument(flag, default="", help=f"{what} a MultigresShard may name (docs/install.md)")
    b.add_argument("--agent-grpc-tls-secret", metavar="SECRET",
                   help=f"Secret in {bundle.NAMESPACE} (tls.crt, tls.key, ca.crt) the agent dials multipoolers "
                        "with, for shards with spec.security.grpcTLS (docs/operations.md, \"TLS for gRPC\")")
    b.set_defaults(run=cmd_install_bundle)

    c = _sub(sub, "completion", "print a shell completion script")
    c.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    c.set_defaults(run=cmd_completion)

    for name in DELEGATES:  # listed for --help; main() dispatches them before parsing
        sub.add_parser(name, help=f"{DELEGATE_HELP[name]} (options: multigres-pools {name} --help)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    daemon = bool(argv) and argv[0] in ("agent", "operator")
    return cli_guard.run(lambda: _main(argv), "multigres-pools", keep_tracebacks=daemon)


def _main(argv: list[str]) -> int:
    if argv and argv[0] in DELEGATES:
        return _delegate(argv[0], argv[1:])
    args = parser().parse_args(argv)
    try:
        return cast(int, args.run(args))  # every command's handler returns its exit code
    except SpecError as exc:
        print(f"multigres-pools: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except (UsageError, inputs.InputError) as exc:
        print(f"multigres-pools: {exc}", file=sys.stderr)
    except OSError as exc:  # writing the output folder
        print(f"multigres-pools: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
