"""A shard's pgBackRest repository named the way Multigres v0.1.0 configures it
(go/common/backup/config.go, PgBackRestConfig), for the commands this collection runs against it
itself: the bootstrap guard's `pgbackrest info` (state/bootstrap.py) and the restore drill's
`pgbackrest restore` (state/drill.py).

- filesystem: `--repo1-type=posix --repo1-path=<path>`, the backup volume mounted at <path>;
- S3: the bucket and region; a custom endpoint path-style with TLS verification off, AWS's regional
  endpoint host-style and verified otherwise; `--repo1-path=/<keyPrefix>/multigres` (one stanza per
  prefix, not per database or shard); and v0.1.0's key type: `shared` with the pod's AWS_* variables
  when told to read the environment, `web-id` when the pod has an IRSA token, `auto` (instance
  metadata) otherwise. The key type is chosen in the shell, where the pod's environment is known.

Pure.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

STANZA = "multigres"  # v0.1.0's one stanza per repository (multigres-v0.1.md §5, pgBackRest)

# ${VAR:-}: the drill's shell runs with `set -u`, and any of these may be unset.
_ENV_KEYS = ('export PGBACKREST_REPO1_S3_KEY="${AWS_ACCESS_KEY_ID:-}" '
             'PGBACKREST_REPO1_S3_KEY_SECRET="${AWS_SECRET_ACCESS_KEY:-}"; '
             'test -n "${AWS_SESSION_TOKEN:-}" && export PGBACKREST_REPO1_S3_TOKEN="$AWS_SESSION_TOKEN"; '
             'key=shared; ')
_OTHER_KEYS = ('key=auto; test -n "${AWS_WEB_IDENTITY_TOKEN_FILE:-}" && test -n "${AWS_ROLE_ARN:-}" && '
               'key=web-id; ')


@dataclass(frozen=True)
class Repository:
    location: str  # for messages: the mount path, or s3://<bucket>/<repo1-path>
    options: tuple[str, ...]  # what names it to pgbackrest
    s3: bool = False
    env_credentials: bool = False  # S3: credentials from AWS_* variables (spec.model.s3_env_credentials)

    def key_setup(self) -> str:
        """Shell to run before `pgbackrest`: the S3 credentials and key type ("" for a filesystem)."""
        if not self.s3:
            return ""
        return _ENV_KEYS if self.env_credentials else _OTHER_KEYS

    def arguments(self) -> str:
        """`--stanza` and the repository options, quoted for the shell (after key_setup)."""
        key = ' --repo1-s3-key-type="$key"' if self.s3 else ""
        return f"--stanza={STANZA} {' '.join(shlex.quote(o) for o in self.options)}{key}"


def posix(path: str) -> Repository:
    return Repository(location=path, options=("--repo1-type=posix", f"--repo1-path={path}"))


def s3_path(key_prefix: str | None) -> str:
    return f"/{key_prefix.rstrip('/')}/{STANZA}" if key_prefix else f"/{STANZA}"


def s3(bucket: str, region: str, endpoint: str | None, key_prefix: str | None, env_credentials: bool) -> Repository:
    where = (f"--repo1-s3-endpoint={endpoint}", "--repo1-s3-uri-style=path", "--no-repo1-storage-verify-tls") \
        if endpoint else (f"--repo1-s3-endpoint=s3.{region}.amazonaws.com", "--repo1-s3-uri-style=host")
    path = s3_path(key_prefix)
    return Repository(location=f"s3://{bucket}{path}", s3=True, env_credentials=env_credentials,
                      options=("--repo1-type=s3", f"--repo1-s3-bucket={bucket}", f"--repo1-s3-region={region}",
                               *where, f"--repo1-path={path}"))
