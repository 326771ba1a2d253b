#!/usr/bin/python
# TEST DOUBLE of multigres.pools.shard_reconcile: returns the result shapes the real module
# documents (changed, actions, requeue_after, status), chosen by the shard name.
from ansible.module_utils.basic import AnsibleModule


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
    requeue = 1 if name == "waiting" else None
    module.exit_json(changed=name == "waiting", actions=[], requeue_after=requeue, status={"conditions": []})


if __name__ == "__main__":
    main()
