"""The shell blocks of a Markdown page, and running one as written: each ```bash (or ```zsh) fence
is a block, keyed by its first command so a test can say which blocks it runs and why it leaves any
out, and fails when a page gains a block nobody accounted for."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

SHELLS = ("bash", "zsh")
DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("playground.md", "cli.md")
DEFAULT_WORKDIR = "/tmp/multigres-pools-localstack"  # what the pages show; tests put their own in its place

# Where each shell block of PAGES runs as written (keyed by page and first command). A block that
# nobody runs fails tests/unit/test_docs_shell.py until it is added here.
ON_LOCALSTACK = "tests/integration/multigres/test_localstack_cli.py, against `localstack up`"
ON_REAL_NODE = "tests/integration/realnode/test_shard_on_real_node.py, against its stack (`--node real`)"
ALONE = "tests/unit/test_docs_shell.py, without a stack"
SETUP = "make test itself: `make setup`, then the localstack test runs `localstack up`"
RUNS_IN: dict[tuple[str, str], str] = {
    ("playground.md", "make setup"): SETUP,
    ("playground.md", "source /tmp/multigres-pools-localstack/env"): ON_LOCALSTACK,
    ("playground.md", ".venv/bin/multigres-pools localstack up --node real"): ON_REAL_NODE,
    ("cli.md", "multigres-pools --version"): ALONE,
    ("cli.md", "multigres-pools status play -n play"): ON_LOCALSTACK,
    ("cli.md", "multigres-pools status play -n play -o json | jq -r '.pods[] | \"\\(.name) \\(.sync) "
               "\\(.lag_bytes)\"'"): ON_LOCALSTACK,
    ("cli.md", "multigres-pools switchover play -n play"): ON_LOCALSTACK,
    ("cli.md", "source <(multigres-pools completion bash)"): ALONE,
    ("cli.md", "mkdir -p ~/.zfunc && fpath=(~/.zfunc $fpath)"): ALONE,
}


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    shell: str
    text: str

    @property
    def key(self) -> str:
        """The first command, without its trailing comment: how a test names the block."""
        first = next(line for line in self.text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
        return first.split("  #")[0].strip()

    def where(self) -> str:
        return f"{self.page}:{self.line}"


def shell_blocks(page: Path) -> list[Block]:
    blocks: list[Block] = []
    fence: str | None = None  # the language of the open fence, "" when it names none
    start, body = 0, []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if not line.startswith("```"):
            body.append(line)
        elif fence is None:
            fence, start, body = line[3:].strip(), number, []
        else:
            if fence in SHELLS:
                blocks.append(Block(page.name, start, fence, "\n".join(body) + "\n"))
            fence = None
    return blocks


def run(block: Block, env: dict[str, str], cwd: Path, timeout: float = 300,
        replace: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The block in its shell, stopping at the first failing command (pipes included)."""
    text = block.text
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    strict = "set -eu -o pipefail\n" if block.shell == "bash" else "setopt err_exit no_unset pipe_fail\n"
    return subprocess.run([block.shell, "-c", strict + text], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def blocks_run_in(where: str) -> list[Block]:
    """The blocks of PAGES that RUNS_IN sends to `where`, in page order."""
    return [b for page in PAGES for b in shell_blocks(DOCS / page) if RUNS_IN.get((b.page, b.key)) == where]
