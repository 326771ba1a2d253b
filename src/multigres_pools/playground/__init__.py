"""A local playground: a real control plane, a stand-in kubelet and sample shards.

Used by `make demo`, `multigres-pools localstack`, the benchmarks and the tests. Nothing in the
agent or operator runtime imports it.
"""
