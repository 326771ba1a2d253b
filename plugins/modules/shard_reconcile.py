#!/usr/bin/python
"""Ansible module multigres.pools.shard_reconcile: a thin shell over module_utils.reconcile."""

from __future__ import annotations

DOCUMENTATION = r"""
module: shard_reconcile
short_description: One reconcile pass of one Multigres shard (pods, PVCs, drains, rolling updates, status)
description:
  - Reads the shard spec (from vars, or from a MultigresShard in the cluster), renders what should
    exist, lists the live objects (one list request per kind, by label selector), plans the
    ordered actions and applies them with server-side apply, then writes the MultigresShard status
    when it changed.
  - Pool pods are managed directly (no StatefulSet). Missing PVCs and pods are all created in one
    pass; scale-down and rolling updates go through the drain state machine that the
    multigres.pools agent executes (pods are annotated, never deleted before
    C(ready-for-deletion)); the primary is updated last, after a switchover request.
  - A pass with nothing to do sends no write request at all.
  - Invalid input (the spec, or a change that removes a pool or cell or shrinks a volume) fails the
    task with the field path; no object is written. When the spec comes from a MultigresShard, its
    status reports the problem (ConfigurationValid=False).
  - See docs/reconcile.md for every rule, condition and event.
version_added: "0.1.0"
options:
  shard:
    description:
      - A MultigresShard document (C(metadata.name), C(metadata.namespace), C(spec)); vars mode.
    type: dict
  spec:
    description: The spec of a MultigresShard, with I(namespace); vars mode.
    type: dict
  name:
    description:
      - Name of a MultigresShard to read from the cluster (with I(namespace)). Its status is
        written, its finalizer drives deletion and owns the created objects.
    type: str
  namespace:
    description: Namespace of the shard's objects (defaults to C(shard.metadata.namespace)).
    type: str
  state:
    description:
      - C(present) reconciles. C(absent) deletes the shard's pods (without drain), its objects and
        the data PVCs whose C(whenDeleted) is C(Delete). With I(name), deletion follows the CR's
        own deletion instead.
    type: str
    choices: [present, absent]
    default: present
  cleanup_timeout:
    description: Seconds to wait for the agent's topology cleanup on shard deletion before skipping it.
    type: float
    default: 120
  kubeconfig:
    description:
      - Path to a kubeconfig. Defaults to C(K8S_AUTH_KUBECONFIG), C(KUBECONFIG), C(~/.kube/config),
        then the in-cluster service account.
    type: path
  context:
    description: Kubeconfig context to use (default the current context).
    type: str
attributes:
  check_mode:
    support: full
    description: Every write is sent as a server-side dry run; events are not recorded.
  diff_mode:
    support: full
    description: Shows the plan (each action with its reason) and a before/after diff per object.
author:
  - multigres.pools maintainers
"""

EXAMPLES = r"""
- name: Reconcile a shard from vars
  multigres.pools.shard_reconcile:
    shard:
      metadata: {name: demo, namespace: db}
      spec:
        clusterName: demo
        globalTopoServer: {address: "etcd.db.svc:2379", rootPath: /multigres/global}
        pools:
          main: {cells: [zone1], replicasPerCell: 3}
  register: pass

- name: Reconcile a MultigresShard from the cluster (what the operator runs)
  multigres.pools.shard_reconcile:
    name: demo
    namespace: db

- name: Preview what a pass would do
  multigres.pools.shard_reconcile:
    name: demo
    namespace: db
  check_mode: true
  diff: true
"""

RETURN = r"""
changed:
  description: Whether any object was written (or would be, in check mode).
  returned: always
  type: bool
actions:
  description: The ordered actions, each with verb, kind, name, reason and result.
  returned: always
  type: list
  elements: dict
  sample:
    - {verb: patch, kind: Pod, name: demo-postgres-default-0-inf-pool-main-zone1-1a2b3c4d-2,
       reason: "drain pod ...-2: scale-down, highest index, not primary (main/zone1 has 3 replicas, wants 2)",
       result: done}
plan:
  description: The plan as text, one line per action plus what the pass waits for.
  returned: always
  type: list
  elements: str
waiting:
  description: What the next pass waits for (the agent, pods becoming Ready, ...).
  returned: always
  type: list
  elements: str
requeue_after:
  description: Seconds after which another pass is useful; 0 when the shard has converged.
  returned: always
  type: float
status:
  description: The MultigresShard status computed by this pass (with I(name) only).
  returned: when a MultigresShard drives the pass
  type: dict
finished:
  description: Deletion complete (state=absent, or the CR is being deleted).
  returned: always
  type: bool
requests:
  description: API requests sent, by verb (get, list, apply, patch, delete, create).
  returned: always
  type: dict
writes:
  description: Write requests sent (0 for a pass with nothing to do).
  returned: always
  type: int
seconds:
  description: Time spent in the pass (render, observe, plan, apply, status).
  returned: always
  type: float
errors:
  description: Validation errors, each starting with the field path.
  returned: on failure
  type: list
  elements: str
"""

import yaml  # noqa: E402
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.multigres.pools.plugins.module_utils import kube  # noqa: E402
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import (  # noqa: E402
    Request,
    request_problems,
    run_pass,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "shard": {"type": "dict"},
            "spec": {"type": "dict"},
            "name": {"type": "str"},
            "namespace": {"type": "str"},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "cleanup_timeout": {"type": "float", "default": 120.0},
            "kubeconfig": {"type": "path"},
            "context": {"type": "str"},
        },
        required_one_of=[("shard", "spec", "name")],
        mutually_exclusive=[("shard", "spec", "name")],
        required_by={"spec": "namespace", "name": "namespace"},
        supports_check_mode=True,
    )
    p = module.params
    request = Request(namespace=p["namespace"], spec=p["spec"], name=p["name"], state=p["state"],
                      definition={"apiVersion": "pools.multigres.com/v1alpha1", "kind": "MultigresShard",
                                  **p["shard"]} if p["shard"] else None,
                      check_mode=module.check_mode, diff=module._diff, cleanup_timeout=p["cleanup_timeout"])
    problems = request_problems(request)  # before connecting: bad input fails the same with or without a cluster
    if problems:
        module.fail_json(msg="shard_reconcile: invalid arguments: " + "; ".join(problems), errors=problems)
    try:
        client = kube.connect(p["kubeconfig"], p["context"])
    except (ValueError, OSError, KeyError, TypeError, AttributeError, yaml.YAMLError) as exc:
        # A kubeconfig the loader cannot make sense of is bad input too, not a crash.
        module.fail_json(msg=f"shard_reconcile: kubeconfig: {type(exc).__name__}: {exc}")
    try:
        result = run_pass(client, request)
    except (ValueError, kube.KubeError, OSError) as exc:
        module.fail_json(msg=f"shard_reconcile: {exc}")
    out = result.as_dict()
    for line in result.waiting:
        if "scale-down" in line and "waits" in line:
            module.warn(line)
    if result.failed:
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
