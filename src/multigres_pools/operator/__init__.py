"""The operator: watches MultigresShard resources and runs playbooks/reconcile.yml for each shard.

Layout (each concern in one file; only `handlers` and `__main__` know about kopf):
- `cpu`: concurrency from the container's cgroup CPU limit.
- `workqueue`: per-shard coalescing queue with deadlines and gates (pure, clock passed in).
- `backoff`: exponential backoff with jitter.
- `outcome`: what a runner result means (success, requeue, invalid spec, retryable failure).
- `artifacts`: keeps ansible-runner artifact directories bounded.
- `relevance`: which watch events matter and which shard they belong to.
- `runner`: one ansible-runner run of the reconcile playbook.
- `controller`: workers that drain the queue through the runner.
- `leader`: Lease-based leader election.
- `metrics`, `health`: Prometheus metrics and /healthz, /readyz, /metrics.
"""
