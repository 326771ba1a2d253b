"""The operator: watches MultigresShards and their objects, decides each shard in process from its
caches, and runs playbooks/reconcile.yml only for shards that have something to write.

Layout (each concern in one file):
- `watch`: list+watch of one kind (an informer) over aiohttp.
- `cache`: the informers' objects, indexed, and a read-only view the engine reads through.
- `decide`: the engine's decision on the caches: does this shard need a playbook run?
- `cpu`: concurrency from the container's cgroup CPU limit.
- `workqueue`: per-shard coalescing queue with deadlines, gates and priorities (pure, clock passed in).
- `backoff`: exponential backoff with jitter.
- `outcome`: what a runner result means (success, requeue, invalid spec, retryable failure).
- `artifacts`: keeps ansible-runner artifact directories bounded.
- `relevance`: which watch events matter and which shard they belong to.
- `runner`: ansible-runner runs of the reconcile playbook, cold or warm (started ahead of the work).
- `controller`: workers that drain the queue: decide, then run the playbook for shards with work.
- `invalid`: marks a spec the module could not even read as invalid.
- `metrics`, `health`: Prometheus metrics and /healthz, /readyz, /metrics.
"""
