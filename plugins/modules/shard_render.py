#!/usr/bin/python
"""Ansible module multigres.pools.shard_render: a thin shell over module_utils.render_folder."""

from __future__ import annotations

DOCUMENTATION = r"""
module: shard_render
short_description: Validate MultigresShards and render their objects (pure; no cluster access)
description:
  - Validates each MultigresShard against the collection's model (the same rules as the CRD's CEL
    rules), optionally checks the update from the previous spec (pools and cells append-only, cell
    topology immutable, storage grow-only), and renders the CR plus a preview of every object the
    operator creates for it.
  - With I(output_dir), writes a kustomize-ready folder (stable file names, sorted keys; stale
    files removed). Without it, only returns the objects.
  - Never contacts the Kubernetes API; never writes a secret value.
version_added: "0.1.0"
options:
  shards:
    description:
      - MultigresShard documents (C(metadata) and C(spec); C(apiVersion) and C(kind) optional).
    type: list
    elements: dict
    required: true
  namespace:
    description: Namespace for shards whose metadata names none.
    type: str
    default: default
  previous:
    description:
      - Previous specs by shard name (for example read from the live CRs). When given, the update
        rules are checked too.
    type: dict
    default: {}
  include:
    description: C(all) (CRs and preview), C(crs) (what GitOps applies) or C(preview).
    type: str
    choices: [all, crs, preview]
    default: all
  output_dir:
    description: Folder to write. Omit to only return the objects.
    type: path
attributes:
  check_mode:
    support: full
    description: Nothing is written; C(changed) and the diff say what would change.
  diff_mode:
    support: full
    description: The diff lists the files that would be written or removed.
requirements:
  - python >= 3.11
  - pydantic >= 2.14 (meta/requirements.txt pins the tested version)
  - PyYAML
author:
  - multigres.pools maintainers (@multigres)
"""

EXAMPLES = r"""
- name: Render the sample shard into a GitOps folder
  multigres.pools.shard_render:
    shards:
      - "{{ lookup('file', 'examples/sample-shard.yaml') | from_yaml }}"
    output_dir: out/

- name: Only validate an update against the live spec
  multigres.pools.shard_render:
    shards: ["{{ desired_shard }}"]
    previous: "{{ {desired_shard.metadata.name: live_shard.spec} }}"
    include: crs
"""

RETURN = r"""
objects:
  description: Every rendered object (the CRs first, then each preview in apply order).
  returned: always
  type: list
  elements: dict
files:
  description: The folder as relative path to YAML text, byte-identical to the CLI's.
  returned: always
  type: dict
changed_files:
  description: Files that were (or in check mode would be) written or removed under output_dir.
  returned: when output_dir is set
  type: list
  elements: str
"""

from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.multigres.pools.plugins.module_utils import deps  # noqa: E402

if deps.HAS_ENGINE:  # else main() fails with the missing library's name and the pip command
    import yaml
    from ansible_collections.multigres.pools.plugins.module_utils.render import folder as render_folder
    from ansible_collections.multigres.pools.plugins.module_utils.render import output
    from ansible_collections.multigres.pools.plugins.module_utils.spec import inputs
    from ansible_collections.multigres.pools.plugins.module_utils.spec.model import (
        DnsLabel,
        MultigresShard,
        SpecError,
        value_problem,
    )


def _load(shards: list[dict[str, Any]], previous: dict[str, Any]) -> tuple[list[tuple[str, MultigresShard]], list[str]]:
    """The validated shards, or every problem, each starting with `shards[i]` or `previous.<name>`."""
    named, problems = [], []
    for i, doc in enumerate(shards):
        where = f"shards[{i}]"
        name = render_folder.shard_name(doc)
        try:
            inputs.check_data(doc, where)
            document = {"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard", **doc}
            named.append((where, render_folder.load_checked(document, previous.get(name) if name else None,
                                                            f"previous.{name}")))
        except SpecError as exc:
            problems += [f"{where} {e}" for e in exc.errors]
        except inputs.InputError as exc:
            problems.append(str(exc))
    return named, problems + render_folder.duplicate_names(named)


def run(module: AnsibleModule) -> None:
    p = module.params
    problem = value_problem(DnsLabel, p["namespace"])
    if problem:
        module.fail_json(msg=f"namespace {p['namespace']!r}: {problem}", errors=[f"namespace: {problem}"])
    try:
        inputs.check_data(p["previous"], "previous")
    except inputs.InputError as exc:
        module.fail_json(msg=f"invalid input: {exc}", errors=[str(exc)])
    named, problems = _load(p["shards"], p["previous"])
    if problems:
        module.fail_json(msg="invalid MultigresShard: " + "; ".join(problems), errors=problems)
    files = render_folder.render_files([shard for _where, shard in named], p["namespace"], p["include"])
    result = {
        "changed": False,
        "files": files,
        "objects": [yaml.safe_load(text) for path, text in files.items() if not path.endswith("kustomization.yaml")],
    }
    if p["output_dir"]:
        try:
            changed = output.write_folder(files, p["output_dir"], check=module.check_mode)
        except OSError as exc:
            module.fail_json(msg=f"output_dir: {exc.filename or p['output_dir']}: {exc.strerror or exc}")
        result.update(changed=bool(changed), changed_files=changed)
        if module._diff:
            result["diff"] = {"before": "", "after": "".join(f"{path}\n" for path in changed),
                              "after_header": f"{p['output_dir']} (files written or removed)"}
    module.exit_json(**result)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "shards": {"type": "list", "elements": "dict", "required": True},
            "namespace": {"type": "str", "default": "default"},
            "previous": {"type": "dict", "default": {}},
            "include": {"type": "str", "choices": ["all", "crs", "preview"], "default": "all"},
            "output_dir": {"type": "path"},
        },
        supports_check_mode=True,
    )
    problem = deps.engine_problem()
    if problem:
        module.fail_json(msg=problem[0], exception=problem[1])
    run(module)


if __name__ == "__main__":
    main()
