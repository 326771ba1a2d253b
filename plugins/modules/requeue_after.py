#!/usr/bin/python
"""Documentation of the multigres.pools.requeue_after action plugin (it has no module side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: requeue_after
short_description: Tell the operator-sdk Ansible Operator when to run the next pass
description:
  - Returns I(period) unchanged. The operator-sdk Ansible Operator (ansible-operator) watches the
    run's events for a task whose action is named C(requeue_after) or C(operator_sdk.util.requeue_after)
    and schedules the next reconcile of the resource after that task's C(period). It stops reading the
    run at that task, so make it the last task.
  - Same contract as C(operator_sdk.util.requeue_after), shipped here so that an image needs no
    collection from Galaxy. Call it by its short name from this collection's roles (the Ansible
    Operator compares the name as written); the multigres.pools.shard role does so when
    C(shard_ansible_operator) is set.
  - Runs as an action plugin on the controller; there is no module to run on a target.
version_added: "0.2.0"
options:
  period:
    description: A Go duration, such as C(2s), C(1.5s) or C(1m30s).
    type: str
    required: true
requirements:
  - python >= 3.11
author:
  - multigres.pools maintainers (@multigres)
"""

EXAMPLES = r"""
# The last task of a role run by the Ansible Operator.
- name: Ask the Ansible Operator for the next pass
  requeue_after:  # noqa: fqcn[action] the Ansible Operator matches the short name
    period: 2s
"""

RETURN = r"""
period:
  description: The period, as given; the Ansible Operator parses it with Go's time.ParseDuration.
  returned: success
  type: str
  sample: 2s
"""
