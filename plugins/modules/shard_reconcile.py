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
  agent_stall_after:
    description:
      - Seconds a pool pod may wait for the agent (Terminating with its finalizer, or a drain requested
        and not taken up) before the status reports C(AgentStalled=True).
      - Defaults to C(MULTIGRES_POOLS_AGENT_STALL_AFTER), else 300.
    type: float
  kubeconfig:
    description:
      - Path to a kubeconfig. Defaults to C(K8S_AUTH_KUBECONFIG), C(KUBECONFIG), C(~/.kube/config),
        then the in-cluster service account.
    type: path
  context:
    description: Kubeconfig context to use (default the current context).
    type: str
  observed:
    description:
      - Path to a snapshot of the shard's objects (JSON written by the operator from its watch
        caches). Its list answers replace the pass's list requests; the MultigresShard itself is
        always read live, and a missing, unreadable or older than 60 s snapshot is ignored (the
        pass then lists as usual). Leave it out when running the playbook yourself.
    type: path
  read_owned_by_name:
    description:
      - With I(name), end the pass by reading one object of each kind the shard owns by name (one
        GET per kind). Under the operator-sdk Ansible Operator (watches.yaml sets it through the
        role's C(shard_ansible_operator)) this is what makes its API proxy watch pods and the other
        kinds the shard owns (PVCs only with C(whenDeleted=Delete)). The proxy does that only for
        objects created with POST or read by name through it; this module creates with server-side
        apply and reads with lists.
    type: bool
    default: false
  allowed_images:
    description:
      - Images a spec may set in C(spec.images); an entry ending in C(*) is a prefix. A spec naming
        another is refused (ConfigurationValid=False, the field named). Empty allows every image;
        unset images (the version's defaults) are always allowed.
    type: list
    elements: str
    default: []
  allowed_service_accounts:
    description: ServiceAccounts a spec may name (C(spec.backup.s3.serviceAccountName)), as I(allowed_images).
    type: list
    elements: str
    default: []
  allowed_secrets:
    description:
      - Secrets a spec may name (C(postgresPasswordSecretRef), C(backup.s3.credentialsSecret),
        C(backup.pgbackrestTLS.secretName), C(images.imagePullSecrets)), as I(allowed_images).
        Secrets the engine generates are never checked.
    type: list
    elements: str
    default: []
  claim_namespaces:
    description:
      - Namespaces whose MultigresShards may already hold this shard's topology root or S3 repository;
        C(*) for every namespace. The shard's own namespace is always searched. A MultigresShard naming
        a topology root or an S3 repository that an older one holds is refused before it creates or
        changes anything (ConfigurationValid=False, the field and the holder named). Looked for while
        the shard has no pool pod and while its spec is not yet reconciled.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Every write is sent as a server-side dry run; events are not recorded.
  diff_mode:
    support: full
    description: Shows the plan (each action with its reason) and a before/after diff per object.
requirements:
  - python >= 3.11
  - pydantic >= 2.14 (meta/requirements.txt pins the tested version)
  - PyYAML
  - cryptography (generates the shard's TLS certificates; ansible-core depends on it)
  - kubernetes (only for a kubeconfig user with a legacy C(auth-provider))
author:
  - multigres.pools maintainers (@multigres)
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
replayed:
  description: List answers taken from the I(observed) snapshot instead of the API (0 without one).
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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.multigres.pools.plugins.module_utils import deps  # noqa: E402
from ansible_collections.multigres.pools.plugins.module_utils.reconcile import arguments as reconcile_args  # noqa: E402

if deps.HAS_ENGINE:  # else main() fails with the missing library's name and the pip command
    from ansible_collections.multigres.pools.plugins.module_utils.reconcile import task as reconcile_task


def main() -> None:
    module = AnsibleModule(
        argument_spec=reconcile_args.ARGUMENT_SPEC,
        required_one_of=reconcile_args.REQUIRED_ONE_OF,
        mutually_exclusive=reconcile_args.MUTUALLY_EXCLUSIVE,
        required_by=reconcile_args.REQUIRED_BY,
        supports_check_mode=True,
    )
    problem = deps.engine_problem()
    if problem:
        module.fail_json(msg=problem[0], exception=problem[1])
    out, warnings = reconcile_task.run(module.params, check_mode=module.check_mode, diff=module._diff)
    for line in warnings:
        module.warn(line)
    if out.get("failed"):
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
