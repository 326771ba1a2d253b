"""The Ansible Operator image's build context (images/ansible-operator) is what
multigres_pools.ansible_operator_image writes, and it agrees with the pins and watches.yaml."""

from __future__ import annotations

import yaml
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools import ansible_operator_image as image
from multigres_pools.playground import ansible_operator
from tests.helpers.collection import REPO


def test_the_checked_in_build_context_is_current():
    context = REPO / image.CONTEXT
    for name, text in image.files(REPO).items():
        path = context / name
        assert path.is_file() and path.read_text() == text, (
            f"{path} is stale: run `.venv/bin/python -m multigres_pools.ansible_operator_image`")
    checked_in = {p.relative_to(context) for p in context.rglob("*") if p.is_file() and not p.name.endswith(".tar.gz")}
    assert checked_in == set(image.files(REPO))


def test_the_image_builds_on_the_release_we_test_and_installs_ansible_core_2_19():
    text = image.containerfile(REPO)
    assert f"ARG BASE=quay.io/operator-framework/ansible-operator:{ansible_operator.VERSION}\nFROM ${{BASE}}\n" in text
    assert image.ansible_core_pin(REPO).startswith("ansible-core==2.19.")
    assert f"pip3 install --no-cache-dir {image.ansible_core_pin(REPO)} -r " in text
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert runtime.startswith(">=2.19")


def test_watches_yaml_runs_the_playbook_the_image_copies_with_the_ansible_operator_switch():
    (watch,) = yaml.safe_load((REPO / "watches.yaml").read_text())
    assert watch["playbook"] == "${HOME}/playbooks/reconcile.yml"
    assert f"cp -r {image.COLLECTION}/playbooks {image.HOME}/playbooks" in image.containerfile(REPO)
    assert watch["vars"]["shard_ansible_operator"] is True
    assert watch["manageStatus"] is False and watch["watchDependentResources"] is True
    # A deleted shard is run only with the module's own finalizer named here (the same playbook).
    assert watch["finalizer"] == {"name": keys.FINALIZER_SHARD, "playbook": watch["playbook"]}
