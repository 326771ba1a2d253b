"""The third-party libraries the engine needs on the host that runs it, checked the way Ansible
modules expect (HAS_X plus the import traceback): a Python without them fails the task with
missing_required_lib's message, the library's name and the pip command, instead of a traceback.
meta/requirements.txt pins the tested versions (what ansible-builder installs)."""

from __future__ import annotations

import importlib.util
import traceback

from ansible.module_utils.basic import missing_required_lib

PYDANTIC_IMPORT_ERROR: str | None  # the traceback when the import failed
try:
    import pydantic  # noqa: F401  # pylint: disable=unused-import
except ImportError:
    HAS_PYDANTIC, PYDANTIC_IMPORT_ERROR = False, traceback.format_exc()
else:
    HAS_PYDANTIC, PYDANTIC_IMPORT_ERROR = True, None

YAML_IMPORT_ERROR: str | None
try:
    import yaml  # noqa: F401  # pylint: disable=unused-import
except ImportError:
    HAS_YAML, YAML_IMPORT_ERROR = False, traceback.format_exc()
else:
    HAS_YAML, YAML_IMPORT_ERROR = True, None

# Only TLS generation imports it (lazily, and ansible-core itself depends on it): looked up, not imported.
HAS_CRYPTOGRAPHY = importlib.util.find_spec("cryptography") is not None

HAS_ENGINE = HAS_PYDANTIC and HAS_YAML


def missing_message(pip_name: str, reason: str | None = None) -> str:
    return (f"{missing_required_lib(pip_name, reason=reason)} Install it with `pip install {pip_name}`, or all of "
            "the collection's runtime requirements with "
            "`pip install -r <collection>/meta/requirements.txt` (see docs/install.md).")


def engine_problem() -> tuple[str, str | None] | None:
    """(message, traceback) for the first missing library the modules import, or None."""
    for pip_name, present, error in (("pydantic", HAS_PYDANTIC, PYDANTIC_IMPORT_ERROR),
                                     ("PyYAML", HAS_YAML, YAML_IMPORT_ERROR)):
        if not present:
            return missing_message(pip_name), error
    return None
