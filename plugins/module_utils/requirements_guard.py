"""Top-level imports of the collection's runtime requirements (meta/requirements.txt) in engine files.

Ansible imports a module's module_utils on hosts that may lack them, and ansible-test's import check
imports every file with the standard library only. Inside `with runtime_requirements():` a missing
requirement leaves its names unbound instead of failing the import: the modules check deps.py first
and fail with missing_required_lib's message before they call into such a file. Any other
ImportError (a broken file of ours, a missing stdlib module) still raises.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

# Import names of the runtime requirements, and of libraries they come with.
RUNTIME_IMPORTS = frozenset({"pydantic", "pydantic_core", "yaml", "cryptography"})


@contextlib.contextmanager
def runtime_requirements() -> Iterator[None]:
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in RUNTIME_IMPORTS:
            raise
