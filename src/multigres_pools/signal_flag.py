"""A flag that a signal handler may set, for a main thread that sleeps until it is.

A handler runs in the main thread at whatever instant the signal lands, possibly inside that
thread's own `threading.Event.wait()` while it holds the Event's lock; the handler's `set()` then
waits for that lock for ever (a deadlock: the command hangs until killed). So `set()` here takes no
lock: it writes a byte to a pipe, and `wait()` sleeps on the pipe with select().
"""

from __future__ import annotations

import os
import select


class SignalFlag:
    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            os.write(self._write, b"\0")

    def is_set(self) -> bool:
        return self._set

    def wait(self, seconds: float | None = None) -> bool:
        """Sleep until set or `seconds` pass (None: until set); whether it is set."""
        while not self._set:
            ready, _, _ = select.select([self._read], [], [], seconds)
            if seconds is not None or ready:
                break
        return self._set

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)
