"""Every `multigres-pools` command, driven through the failures that need no cluster, ends with one clear
message and its documented exit code (docs/cli.md, "Exit codes"), never a traceback: an API server that
refuses, a host that does not resolve, a certificate the kubeconfig's CA did not sign, a missing
kubeconfig, a context that does not exist, bad arguments, unwritable folders, and Ctrl-C.

`localstack up` is only driven through argument and --workdir errors: anything further builds
toolchains and starts a stack. Commands run in this process (`tests/helpers/cli.py`, the console
script's own `main`) unless the test needs a process: a signal, or a daemon's logging and lease."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from multigres_pools.playground import pki
from tests.helpers.cli import run as run_cli
from tests.helpers.collection import REPO

CLI = [sys.executable, "-m", "multigres_pools.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


@pytest.fixture(scope="module")
def untrusted_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """An https port on 127.0.0.1 whose certificate another CA signed, and the CA the kubeconfig trusts."""
    served = pki.generate(tmp_path_factory.mktemp("served"))
    trusted = pki.generate(tmp_path_factory.mktemp("trusted"))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(served.serving_cert, served.serving_key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                conn.close()  # the client gave up on our certificate: what this server is for

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], trusted.ca_cert
    stop.set()
    thread.join()
    listener.close()


def _kubeconfig(path: Path, server: str, ca: Path | None = None, context: str = "c") -> Path:
    cluster = {"server": server, **({"certificate-authority": str(ca)} if ca else {"insecure-skip-tls-verify": True})}
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


@pytest.fixture
def configs(tmp_path: Path, closed_port: int, untrusted_tls: tuple[int, Path]) -> dict[str, Path]:
    tls_port, ca = untrusted_tls
    return {
        "refused": _kubeconfig(tmp_path / "refused", f"https://127.0.0.1:{closed_port}"),
        "unknown-host": _kubeconfig(tmp_path / "unknown", "https://no-such-host.invalid:6443"),
        "tls": _kubeconfig(tmp_path / "tls", f"https://127.0.0.1:{tls_port}", ca),
        "no-context": _kubeconfig(tmp_path / "ctx", f"https://127.0.0.1:{closed_port}", context="gone"),
        "missing": tmp_path / "no-such-kubeconfig",
    }


def _clean(out: str, err: str) -> None:
    assert "Traceback" not in out + err, out + err
    assert "internal error" not in err, err  # the safety net must not be what answers a known failure


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """In this process (`tests/helpers/cli.py`); the daemons and Ctrl-C get a process of their own."""
    done = run_cli(*args)
    _clean(done.stdout, done.stderr)
    return done


def run_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
    _clean(done.stdout, done.stderr)
    return done


def interrupted(args: list[str], marker: str, timeout: float = 60) -> tuple[int, str]:
    """Starts the command, waits until its output shows `marker`, sends SIGINT (Ctrl-C); its exit code
    and everything it wrote."""
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list[str] = []
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        timer.cancel()
    out = "".join(seen) + rest
    _clean(out, "")
    return proc.returncode, out


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# --- status -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("config", "code", "says"), [
    ("refused", 1, "nothing listens there"),
    ("unknown-host", 1, "the host name does not resolve here"),
    ("tls", 1, "its certificate is not signed by the kubeconfig's certificate authority"),
    ("missing", 2, "does not exist"),
    ("no-context", 2, "has no context named 'gone'"),
])
@pytest.mark.parametrize("command", ["status", "switchover"])
def test_shard_commands_name_what_is_wrong_with_the_cluster_or_the_kubeconfig(configs, config, code, says,
                                                                              command) -> None:
    done = run(command, "play", "-n", "play", "--kubeconfig", str(configs[config]))
    assert done.returncode == code and done.stdout == ""
    assert says in _one_line(done)


def test_status_names_a_kubeconfig_variable_that_points_nowhere(tmp_path, monkeypatch) -> None:
    gone = tmp_path / "gone" / "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(gone))
    done = run("status", "play", "-n", "play")
    assert done.returncode == 2 and f"KUBECONFIG={gone}: no such file" in _one_line(done)


def test_status_context_flag_names_a_context_that_does_not_exist(configs) -> None:
    done = run("status", "play", "--kubeconfig", str(configs["refused"]), "--context", "prod")
    assert done.returncode == 2 and "has no context named 'prod'" in _one_line(done)


@pytest.mark.parametrize("args", [[], ["play", "-o", "xml"], ["play", "--watch", "0"], ["play", "--color", "pink"],
                                  ["play", "--rpc-timeout", "soon"]])
def test_status_bad_arguments_are_usage_errors(args) -> None:
    done = run("status", *args)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("multigres-pools status: error:")


def test_ctrl_c_ends_status_watch_quietly(configs) -> None:
    """Without a terminal each round prints after a blank line; an unreachable API server is a screen
    that keeps being redrawn, not an exit."""
    code, out = interrupted(["status", "play", "--watch", "0.2", "--kubeconfig", str(configs["refused"])],
                            "nothing listens there")
    assert code == 0
    rounds = [r for r in out.split("\n\n") if r.strip()]
    assert rounds and all("cannot reach the API server" in r for r in rounds), out


def test_watch_before_the_shard_name_takes_its_default_interval(configs) -> None:
    code, out = interrupted(["status", "--watch", "play", "--kubeconfig", str(configs["tls"])], "certificate")
    assert code == 0 and "not signed by the kubeconfig's certificate authority" in out


# --- switchover -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "says"), [
    ([], "the following arguments are required: shard"),
    (["play", "--to", " "], "--to: empty"),
    (["play", "--timeout", "0"], "--timeout: 0 is not a positive number"),
    (["play", "--timeout", "soon"], "invalid float value"),
])
def test_switchover_bad_arguments_are_usage_errors(args, says) -> None:
    done = run("switchover", *args)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and last.startswith("multigres-pools switchover: error:") and says in last


# --- render, install-bundle, completion, the command itself -----------------------------------------------
SAMPLE = str(REPO / "examples" / "sample-shard.yaml")


@pytest.mark.parametrize(("args", "says"), [
    (["render", "-f", "/nonexistent.yaml", "-o", "OUT"], "/nonexistent.yaml: No such file or directory"),
    (["render", "-f", SAMPLE, "-o", "/proc/x/out"], "/proc/x: No such file or directory"),
    (["install-bundle", "-o", "/proc/x"], "/proc/x: No such file or directory"),
    (["install-bundle", "-o", "OUT", "--image", "NOT AN IMAGE"], "--image 'NOT AN IMAGE'"),
])
def test_file_commands_name_the_path_or_option(args, says, tmp_path) -> None:
    done = run(*(str(tmp_path / "out") if a == "OUT" else a for a in args))
    assert done.returncode == 2 and says in _one_line(done)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [[], ["nope"], ["render"], ["render", "--bogus"], ["completion", "fish"],
                                  ["install-bundle"], ["localstack"], ["localstack", "sideways"]])
def test_bad_arguments_are_usage_errors(args) -> None:
    done = run(*args)
    assert done.returncode == 2 and ": error: " in done.stderr.strip().splitlines()[-1]


# --- localstack (no stack is started) ---------------------------------------------------------------------
@pytest.mark.parametrize(("args", "code", "says"), [
    (["up", "--workdir", "/proc/x"], 2, "--workdir /proc/x: No such file or directory"),
    (["up", "--workdir", "/etc/hostname"], 2, "--workdir /etc/hostname: File exists"),
    (["up", "--replicas", "0", "--workdir", "/proc/x"], 2, "--replicas must be at least 1"),
    (["down", "--workdir", "/proc/x"], 1, "nothing is up in /proc/x"),
])
def test_localstack_workdir_and_argument_errors(args, code, says) -> None:
    done = run("localstack", *args)
    assert done.returncode == code and says in _one_line(done)


# --- agent and operator -----------------------------------------------------------------------------------
def test_agent_names_a_missing_kubeconfig_or_context(configs) -> None:
    for config, says in (("missing", "does not exist"), ("no-context", "has no context named 'gone'")):
        done = run_process("agent", "--kubeconfig", str(configs[config]), "--http", f"127.0.0.1:{_free_port()}")
        assert done.returncode == 2 and "cannot load the kubeconfig" in done.stderr and says in done.stderr


def test_operator_names_a_missing_kubeconfig_or_context(configs, tmp_path) -> None:
    for config, says in (("missing", "does not exist"), ("no-context", "has no context named 'gone'")):
        done = run_process("operator", "-n", "db", "--kubeconfig", str(configs[config]), "--log-format", "text",
                   "--artifacts-dir", str(tmp_path), "--health-addr", f"127.0.0.1:{_free_port()}")
        assert done.returncode == 2 and f"cannot load the kubeconfig: kubeconfig {configs[config]}" in done.stderr
        assert says in done.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["agent", "--stall-after", "-1"], "--stall-after: -1.0 is not a number of seconds"),
    (["agent", "--http", "nope"], "--http: 'nope' is not host:port"),
    (["operator", "-n", "db", "--batch-size", "0"], "--batch-size must be at least 1"),
    (["operator", "--log-format", "xml"], "argument --log-format: invalid choice"),
])
def test_daemon_bad_arguments_are_usage_errors(args, says, tmp_path) -> None:
    extra = ["--artifacts-dir", str(tmp_path), "--log-format", "text"] if "--log-format" not in args else []
    done = run_process(*args, *(extra if args[0] == "operator" else []))
    assert done.returncode == 2 and says in done.stderr.strip().splitlines()[-1], done.stderr


def test_ctrl_c_stops_an_agent_waiting_for_its_lease_on_an_unreachable_api_server(configs) -> None:
    code, out = interrupted(["agent", "--kubeconfig", str(configs["refused"]), "--http", f"127.0.0.1:{_free_port()}"],
                            "attempt failed")
    assert code == 0, out


def test_ctrl_c_stops_a_standalone_agent_whose_api_server_certificate_is_untrusted(configs) -> None:
    code, out = interrupted(["agent", "--standalone", "--kubeconfig", str(configs["tls"]),
                             "--http", f"127.0.0.1:{_free_port()}"], "CERTIFICATE_VERIFY_FAILED")
    assert code == 0, out


def test_ctrl_c_stops_an_operator_whose_api_server_does_not_resolve(configs, tmp_path) -> None:
    code, out = interrupted(["operator", "-n", "db", "--kubeconfig", str(configs["unknown-host"]),
                             "--log-format", "text", "--artifacts-dir", str(tmp_path),
                             "--health-addr", f"127.0.0.1:{_free_port()}"], "attempt failed")
    assert code == 0, out
