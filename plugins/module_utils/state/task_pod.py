"""A throwaway task pod with one container whose exit code says what happened (a restore drill, a
clone's copy): how it ended, read the same way for every such pod. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.manifest import Manifest


@dataclass(frozen=True)
class Ended:
    """A task pod whose container has ended, and what that means."""

    succeeded: bool
    reason: str
    message: str
    finished_at: str


@dataclass(frozen=True)
class TaskPod:
    """What one kind of task pod's ending means: its container, what success says, and each known
    failing exit code's (reason, what failed). Any other exit (a kill, an image that does not run)
    is Unexpected."""

    noun: str  # "drill", "copy": in the messages of an unexpected end
    container: str
    success: tuple[str, str]  # (reason, message)
    exits: Mapping[int, tuple[str, str]]

    def ended(self, pod: Manifest) -> Ended | None:
        """The outcome once the pod ended (phase Succeeded or Failed), else None."""
        status = pod.get("status") or {}
        phase = status.get("phase")
        if phase not in ("Succeeded", "Failed"):
            return None
        done = next(((entry.get("state") or {}).get("terminated") or {}
                     for entry in status.get("containerStatuses") or [] if entry.get("name") == self.container), {})
        code, at = done.get("exitCode"), str(done.get("finishedAt") or "")
        if phase == "Succeeded" and code in (0, None):
            return Ended(True, *self.success, at)
        if isinstance(code, int):
            unknown = ("Unexpected", f"the {self.noun} container ended with exit code {code}")
            reason, what = self.exits.get(code, unknown)
        else:
            reason, what = "Unexpected", f"the {self.noun} pod failed (no container exit recorded)"
        if status.get("reason"):  # ended by the kubelet itself: Evicted (scratch space), DeadlineExceeded
            what = f"the {self.noun} pod failed: {status['reason']}: {status.get('message') or ''}".rstrip(": ")
        tail = str(done.get("message") or "").strip()
        return Ended(False, reason, f"{what}{': ' + tail[-500:] if tail else ''}", at)
