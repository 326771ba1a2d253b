"""Issue 12, least privilege on the real kube-apiserver (RBAC authorizer, garbage collector): the
install bundle's ServiceAccounts, Roles and Bindings are created from `bundle.files()`, tokens are
minted for them with the TokenRequest API, and

- what each ServiceAccount may do (a SelfSubjectRulesReview, `kubectl auth can-i --list`) is
  exactly docs/install.md's table, parsed from the docs, plus what every authenticated user may do;
- the engine, as the operator's ServiceAccount, takes a shard through create, scale and delete
  (the agent's part played as the agent's ServiceAccount) and the deletion completes: finalizer
  released, every owned object gone, the generated Secrets by the garbage collector;
- the agent can patch pool pods, cannot delete pods or read Secrets, and the bundle's
  ValidatingAdmissionPolicy refuses its writes to pods that are not pool pods.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys, naming
from ansible_collections.multigres.pools.plugins.module_utils.kube.client import (
    Credentials,
    KubeClient,
    KubeError,
    connect,
)
from ansible_collections.multigres.pools.plugins.module_utils.state import facts, ownership
from kubernetes import client as k8s

from multigres_pools.install import bundle
from multigres_pools.playground.localstack import install_crd
from tests.helpers import service_accounts
from tests.helpers.fake_agent import FakeAgent
from tests.helpers.polling import eventually
from tests.integration.reconcile.rig import Rig, spec

pytestmark = pytest.mark.cluster

DOCS = Path(__file__).resolve().parents[3] / "docs" / "install.md"
Triple = tuple[str, str, str]  # (API group, resource, verb)


@dataclass
class Installed:
    admin: KubeClient
    watched: str
    cluster_wide: bool
    tokens: dict[str, str]

    def client(self, account: str) -> KubeClient:
        return KubeClient(Credentials(server=self.admin.creds.server, ca_data=self.admin.creds.ca_data,
                                      token=self.tokens[account]))

    def api_client(self, kube: Any, account: str) -> k8s.ApiClient:
        """A `kubernetes` client (what the agent uses) authenticated as `account`."""
        cfg = kube.api_client().configuration
        mine = k8s.Configuration()
        mine.host, mine.ssl_ca_cert = cfg.host, cfg.ssl_ca_cert
        mine.api_key = {"authorization": f"Bearer {self.tokens[account]}"}
        return k8s.ApiClient(mine)


@pytest.fixture(params=[False, True], ids=["namespaced", "cluster-wide"])
def installed(request, kube, namespace) -> Iterator[Installed]:  # type: ignore[no-untyped-def]
    """The bundle's RBAC, ServiceAccounts and admission policy for `namespace` (or cluster-wide)."""
    admin = connect(str(kube.kubeconfig))
    install_crd(admin)
    with service_accounts.installed_rbac(admin, namespace, cluster_wide=request.param) as tokens:
        done = Installed(admin, namespace, request.param, tokens)
        for account in service_accounts.ACCOUNTS:  # the authorizer's caches fill in the background
            want = _documented(account, {bundle.WATCHED})
            eventually(lambda a=account, w=want: w <= _rules(done.client(a), namespace), 60, f"{account}'s Roles")
        yield done


# --- what each ServiceAccount may do ----------------------------------------------------------------
def _rules(client: KubeClient, namespace: str) -> set[Triple]:
    """`kubectl auth can-i --list -n namespace` for the client's user, one triple per verb."""
    review = client.request("create", "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                            body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                                  "spec": {"namespace": namespace}})
    assert not review["status"].get("incomplete"), review["status"]
    out = set()
    for rule in review["status"]["resourceRules"]:
        assert not rule.get("resourceNames"), rule
        out |= set(itertools.product(rule.get("apiGroups") or [""], rule["resources"], rule["verbs"]))
    return out


def _documented(account: str, where: set[str]) -> set[Triple]:
    """docs/install.md's table for `account`, rows whose scope is in `where`, as triples."""
    out = set()
    for row_account, row_where, groups, resources, verbs in bundle.parse_permissions_table(DOCS.read_text()):
        if row_account == account and row_where in where:
            out |= set(itertools.product(groups, resources, verbs))
    return out


def test_each_service_account_may_do_exactly_what_install_md_documents(installed, kube):  # type: ignore[no-untyped-def]
    admin = installed.admin
    # What any authenticated user may do (self reviews): a ServiceAccount bound to nothing.
    nobody = f"nobody-{uuid.uuid4().hex[:6]}"
    admin.create({"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": nobody, "namespace": keys.INSTALL_NAMESPACE}}, field_manager="test")
    try:
        installed.tokens[nobody] = service_accounts.token(admin, nobody)
        baseline = _rules(installed.client(nobody), installed.watched)
    finally:
        admin.delete("v1", "ServiceAccount", keys.INSTALL_NAMESPACE, nobody)
    assert baseline and not any(resource in ("pods", "secrets") for _, resource, _ in baseline)

    other = f"t-other-{uuid.uuid4().hex[:6]}"
    service_accounts.ensure_namespace(admin, other)
    try:
        for account in (bundle.OPERATOR, bundle.AGENT):
            client = installed.client(account)
            scopes = {installed.watched: {bundle.WATCHED}, keys.INSTALL_NAMESPACE: {bundle.INSTALL}, other: set()}
            if installed.cluster_wide:
                scopes = {ns: where | {bundle.WATCHED} for ns, where in scopes.items()}
            scopes = {ns: where | {bundle.CLUSTER} for ns, where in scopes.items()}  # the review APIs: everywhere
            for ns, where in scopes.items():
                got = _rules(client, ns) - baseline
                assert got == _documented(account, where), (account, ns, got ^ _documented(account, where))
            assert not any(r == "secrets" and v == "delete" for _, r, v in _rules(client, installed.watched))
    finally:
        admin.delete("v1", "Namespace", None, other)


# --- the engine as the operator's ServiceAccount ------------------------------------------------------
def _owned_by(obj: dict[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in facts.meta(obj).get("ownerReferences") or [])


OWNED_KINDS = (("v1", "Pod"), ("v1", "PersistentVolumeClaim"), ("v1", "Service"), ("v1", "ConfigMap"),
               ("v1", "Secret"), ("policy/v1", "PodDisruptionBudget"), ("apps/v1", "Deployment"),
               ("networking.k8s.io/v1", "NetworkPolicy"))


def _owned(admin: KubeClient, namespace: str, uid: str) -> list[str]:
    return [f"{kind}/{facts.name(o)}" for api_version, kind in OWNED_KINDS
            for o in admin.list(api_version, kind, namespace) if _owned_by(o, uid)]


@pytest.mark.parametrize("installed", [False], ids=["namespaced"], indirect=True)  # the same grants cluster-wide
def test_a_shard_is_created_scaled_and_deleted_by_the_operators_service_account(installed, kube, kubelet):  # type: ignore[no-untyped-def]
    ns, admin = installed.watched, installed.admin
    rig = Rig(installed.client(bundle.OPERATOR), ns, FakeAgent(installed.api_client(kube, bundle.AGENT), ns), kubelet)
    body = {**spec(2), "pvcDeletionPolicy": {"whenDeleted": "Delete"}}
    cr = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "metadata": {"name": "demo", "namespace": ns},
          "spec": body}
    uid = facts.uid(admin.create(cr, field_manager="test"))  # users make shards; the operator may not
    rig.settle(name="demo")
    assert len(rig.pods()) == 2
    sid = naming.ShardId("demo", "postgres", "default", "0-inf")
    generated = [naming.password_secret_name(sid), naming.pgbackrest_ca_secret_name(sid),
                 naming.pgbackrest_tls_secret_name(sid)]
    assert all(_owned_by(admin.get("v1", "Secret", ns, name) or {}, uid) for name in generated)

    admin.merge_patch(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, "demo",
                      {"spec": {"pools": {"main": {"replicasPerCell": 3}}}}, field_manager="test")
    rig.settle(name="demo")
    assert len(rig.pods()) == 3

    admin.delete(keys.API_GROUP_VERSION, keys.SHARD_KIND, ns, "demo")
    rig.run(name="demo")
    assert rig.agent.complete_topology_cleanup("demo")
    for _ in range(10):
        if rig.run(name="demo").finished:
            break
        rig.world()
    assert rig.results[-1].finished, rig.results[-1].plan
    assert rig.cr() is None  # the finalizer was released: the CR is gone
    assert not any(a["kind"] == "Secret" for r in rig.results for a in r.actions if a["verb"] == "delete")
    # The garbage collector takes what the engine left: the generated Secrets.
    eventually(lambda: not _owned(admin, ns, uid), 120, "every object the shard owned to be gone")
    assert all(admin.get("v1", "Secret", ns, name) is None for name in generated)


# --- the agent --------------------------------------------------------------------------------------
def _pod(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_a_blocking_controller_reference_to_the_shard_needs_its_finalizers(installed):  # type: ignore[no-untyped-def]
    """OwnerReferencesPermissionEnforcement (on in the harness): a ServiceAccount that may create pods
    but not update multigresshards/finalizers can copy the shard's controller reference only without
    blockOwnerDeletion, which state/ownership.py does not count; the operator's ServiceAccount sets it."""
    ns, admin = installed.watched, installed.admin
    cr = admin.create({"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND,
                       "metadata": {"name": "demo", "namespace": ns}, "spec": spec(2)}, field_manager="test")
    owner = ownership.Owner.of(cr)
    assert owner is not None
    ref = {"apiVersion": keys.API_GROUP_VERSION, "kind": keys.SHARD_KIND, "name": "demo", "uid": owner.uid,
           "controller": True, "blockOwnerDeletion": True}
    admin.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "forger", "namespace": ns}},
                 field_manager="test")
    admin.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "forger", "namespace": ns},
                  "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get"]}]},
                 field_manager="test")
    admin.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "forger", "namespace": ns},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "forger"},
                  "subjects": [{"kind": "ServiceAccount", "name": "forger", "namespace": ns}]}, field_manager="test")
    forger = KubeClient(Credentials(server=admin.creds.server, ca_data=admin.creds.ca_data,
                                    token=service_accounts.token(admin, "forger", ns)))

    def forged(name: str, blocking: bool) -> dict[str, Any]:
        pod = _pod(name, ns, {})
        pod["metadata"]["ownerReferences"] = [{**ref, "blockOwnerDeletion": blocking}]
        return pod

    def created_without_blocking() -> dict[str, Any] | None:  # once the authorizer knows the new Role
        try:
            return forger.create(forged("copied", False), field_manager="forger")
        except KubeError as exc:
            assert exc.status == 403 and "blockOwnerDeletion" not in exc.message, exc
            return None
    copied = eventually(created_without_blocking, 60, "the forger's Role")
    assert copied is not None and not owner.owns(copied, "Pod", set()) and not owner.controls(copied)
    with pytest.raises(KubeError) as refused:
        forger.create(forged("forged", True), field_manager="forger")
    assert refused.value.status == 403 and "blockOwnerDeletion" in refused.value.message
    made = installed.client(bundle.OPERATOR).apply(forged("by-the-operator", True), keys.FIELD_MANAGER)
    assert owner.owns(made, "Pod", set())


def test_the_agent_patches_pool_pods_only_and_cannot_delete_pods_or_read_secrets(installed):  # type: ignore[no-untyped-def]
    ns, admin, agent = installed.watched, installed.admin, installed.client(bundle.AGENT)
    pool = admin.create(_pod("pool", ns, {keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}), field_manager="test")
    admin.create(_pod("web", ns, {"app": "web"}), field_manager="test")
    admin.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app-db", "namespace": ns},
                  "stringData": {"password": "x"}}, field_manager="test")

    role = {"metadata": {"labels": {keys.LABEL_ROLE: "REPLICA"}}}
    patched = agent.merge_patch("v1", "Pod", ns, "pool", role, field_manager=keys.AGENT_FIELD_MANAGER)
    assert facts.labels(patched)[keys.LABEL_ROLE] == "REPLICA"
    agent.merge_patch("v1", "Pod", ns, "pool", {"status": {"conditions": [
        {"type": keys.POD_CONDITION_DRAIN_STALLED, "status": "False"}]}},
        field_manager=keys.AGENT_FIELD_MANAGER, subresource="status")

    def in_force() -> bool:
        """The API server loads a new policy and binding in the background (about a second)."""
        try:
            agent.merge_patch("v1", "Pod", ns, "web", role, field_manager=keys.AGENT_FIELD_MANAGER, dry_run=True)
        except KubeError as exc:
            return exc.status == 403
        return False
    eventually(in_force, 60, "the agent's admission policy to be in force")
    with pytest.raises(KubeError) as refused:  # admission: not a pool pod
        agent.merge_patch("v1", "Pod", ns, "web", role, field_manager=keys.AGENT_FIELD_MANAGER)
    policy = bundle.AGENT_POD_POLICY
    assert refused.value.status == 403, refused.value
    assert refused.value.message == (f'pods "web" is forbidden: ValidatingAdmissionPolicy \'{policy}\' with binding '
                                     f"'{policy}' denied request: {bundle.AGENT_POD_POLICY_MESSAGE}")
    with pytest.raises(KubeError) as refused:  # nor by relabelling it one
        agent.merge_patch("v1", "Pod", ns, "web", {"metadata": {"labels": {
            keys.LABEL_APP_COMPONENT: keys.COMPONENT_POOL}}}, field_manager=keys.AGENT_FIELD_MANAGER)
    assert bundle.AGENT_POD_POLICY_MESSAGE in str(refused.value)
    with pytest.raises(KubeError) as refused:  # nor by taking the label off a pool pod
        agent.merge_patch("v1", "Pod", ns, "pool", {"metadata": {"labels": {keys.LABEL_APP_COMPONENT: None}}},
                          field_manager=keys.AGENT_FIELD_MANAGER)
    assert bundle.AGENT_POD_POLICY_MESSAGE in str(refused.value)
    # The operator is not restricted by the agent's policy.
    installed.client(bundle.OPERATOR).merge_patch("v1", "Pod", ns, "web", role, field_manager="test")

    for call in (lambda: agent.delete("v1", "Pod", ns, "pool", uid=facts.uid(pool)),
                 lambda: agent.get("v1", "Secret", ns, "app-db"),
                 lambda: agent.list("v1", "Secret", ns)):
        with pytest.raises(KubeError) as refused:
            call()
        assert refused.value.status == 403, refused.value
    assert admin.get("v1", "Pod", ns, "pool") is not None
