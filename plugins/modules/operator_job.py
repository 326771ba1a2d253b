#!/usr/bin/python
"""Documentation of the multigres.pools.operator_job action plugin (it has no module side)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: operator_job
short_description: Wait for the operator's next batch of shards (operator use only)
description:
  - Blocks until the multigres.pools operator writes one batch of shards (one JSON line) into
    I(fifo), or until I(idle_timeout) seconds pass, and returns the batch as C(shards).
  - Used by the first play of playbooks/operator_batch.yml so that ansible-playbook has started and
    loaded the engine before the work arrives. Writes nothing to the cluster.
  - Runs as an action plugin on the controller; there is no module to run on a target.
version_added: "0.2.0"
options:
  fifo:
    description: Path of the FIFO to read the batch from.
    type: path
    required: true
  idle_timeout:
    description: Seconds to wait for a batch before returning an empty one.
    type: float
    default: 300
requirements:
  - python >= 3.11
  - pydantic >= 2.14 and PyYAML on the controller (the engine is imported before the batch arrives)
author:
  - multigres.pools maintainers (@multigres)
"""

EXAMPLES = r"""
# The first play of playbooks/operator_batch.yml; the operator sets operator_job_fifo.
- name: Take the batch
  multigres.pools.operator_job:
    fifo: "{{ operator_job_fifo }}"
    idle_timeout: 300
  register: operator_job
"""

RETURN = r"""
shards:
  description: The shards to reconcile, each with C(host), C(namespace), C(name) and C(observed) (a path or "").
  returned: always
  type: list
  elements: dict
"""
