"""When a real-node test fails, print what a user would look at first (the tails of multiorch's and the
gateway's logs, pods, the shard's status, recent events, the tails of the poolers' logs), so a red CI
run says why without a rerun on the machine that failed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ansible_collections.multigres.pools.plugins.module_utils.core import keys

from multigres_pools.playground.realnode.install import kubectl

# multiorch first: what CI keeps of a failure is its start, and multiorch's log says whether (and why)
# it failed a primary over or repaired a standby; the pods come next.
_LOOKS = (
    ("multiorch", ("-n", "{ns}", "logs", "-l", f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_MULTIORCH}",
                   "--tail=60", "--all-containers", "--prefix")),
    # The gateway's discovery says which pooler address it routes to ("New pooler discovered",
    # "Pooler updated", "Pooler removed") and why a query was refused.
    ("multigateway", ("-n", "{ns}", "logs", "-l", f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_MULTIGATEWAY}",
                      "--tail=40", "--all-containers", "--prefix")),
    ("pods", ("get", "pods", "-A", "-o", "wide")),
    ("the shard's status", ("-n", "{ns}", "get", "multigresshards", "-o", "jsonpath={.items[*].status}")),
    ("events", ("-n", "{ns}", "get", "events", "--sort-by=.lastTimestamp")),
    ("multipoolers", ("-n", "{ns}", "logs", "-l", f"{keys.LABEL_APP_COMPONENT}={keys.COMPONENT_POOL}",
                      "-c", "multipooler", "--tail=25", "--prefix", "--max-log-requests=10")),
    ("the agent", ("-n", keys.INSTALL_NAMESPACE, "logs", f"deployment/{keys.AGENT_COMPONENT}", "--tail=40")),
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    watched = getattr(item, "funcargs", {}).get("watched")
    if report.failed and call.when == "call" and watched is not None:
        stack = watched.stack
        for title, args in _LOOKS:
            argv = [arg.replace("{ns}", stack.namespace) for arg in args]
            output = kubectl(stack.kubeconfig, *argv, check=False, timeout=60)
            report.sections.append((f"real node: {title}", output[-12000:]))
    return report
