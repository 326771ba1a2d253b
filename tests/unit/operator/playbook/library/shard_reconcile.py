#!/usr/bin/python
# TEST DOUBLE of multigres.pools.shard_reconcile: returns the result shapes the real module
# documents (changed, actions, requeue_after, status), chosen by the shard name.
from ansible.module_utils.basic import AnsibleModule


def write_until_stopped(module):
    """Add a key to ConfigMap `writes` every 0.2 s until it holds `stop`: a run that keeps writing,
    for the test that a deposed operator writes nothing. Each write is named (key prefix and field
    manager) after the operator's artifacts directory, which the test names after its identity."""
    import os
    import time

    from ansible_collections.multigres.pools.plugins.module_utils.core import keys
    from ansible_collections.multigres.pools.plugins.module_utils.kube.client import KubeError, connect

    me = os.path.basename(os.path.dirname(os.environ.get(keys.ENV_WRITE_FENCE, ""))) or "unfenced"
    kube = connect(os.environ.get("KUBECONFIG"))
    namespace = module.params["namespace"]
    deadline = time.monotonic() + 300
    seq = 0
    while time.monotonic() < deadline:
        if ((kube.get("v1", "ConfigMap", namespace, "writes") or {}).get("data") or {}).get("stop"):
            return
        seq += 1
        try:
            kube.merge_patch("v1", "ConfigMap", namespace, "writes", {"data": {f"{me}.{seq}": "x"}},
                             field_manager=me)
        except KubeError as exc:
            module.fail_json(msg=str(exc))
        time.sleep(0.2)


def main():
    module = AnsibleModule(argument_spec={"name": {"type": "str", "required": True},
                                          "namespace": {"type": "str", "required": True}})
    name = module.params["name"]
    if name == "invalid":
        cond = {"type": "ConfigurationValid", "status": "False", "reason": "Invalid",
                "message": "spec.pools.main.replicasPerCell: must be >= 1"}
        module.fail_json(msg="invalid spec", status={"conditions": [cond]})
    if name == "unparsable":
        module.fail_json(msg="invalid MultigresShard", errors=["spec.clusterName: field required"])
    if name == "boom":
        module.fail_json(msg="apiserver said 500")
    if name == "writer":
        write_until_stopped(module)
    requeue = 1 if name == "waiting" else None
    module.exit_json(changed=name == "waiting", actions=[], requeue_after=requeue, status={"conditions": []})


if __name__ == "__main__":
    main()
