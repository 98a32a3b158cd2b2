"""The docs' own text, run as written on one fresh instance (issue 30, "keep it so").

Every fenced ``console``/``bash``/``sh``/``shell`` block of README.md and docs/*.md (not the
generated docs/reference/), and every ``python``/``ipython`` block with a ``%yt``/``%%yt`` magic,
runs against one fresh platform started from ``yitong.example.yaml`` (what ``make run`` uses), as
its admin (the one person a fresh install has), with the environment a notebook server's terminal
gets (``YITONG_API_URL``, ``JUPYTERHUB_API_TOKEN``, ``YITONG_VC``, ``YITONG_PROFILE``) and a home
directory of its own per page. A page is a walk-through: its blocks run in order, one test per
page, in one bash per block (a console block's ``$`` commands share that bash, so ``cd`` holds).

Conventions, read from the docs:

- In a ``console`` block, a ``$ `` line is a command and what follows it is its output (not
  compared); output whose first line starts with ``yt: `` states the command fails (non-zero).
  A ``bash``/``sh``/``shell`` block runs as one script; each command must exit 0.
- Magic blocks run in one real ``yitong-python3`` kernel per page (cwd: the page's home); a
  ``yt: `` line on stderr is a failure, as the magics print refusals that way.
- An HTML comment on the line just before a fence changes that block:
  ``<!-- verbatim: skip — REASON -->`` (cannot run here: a cluster, a GPU),
  ``<!-- verbatim: setup — REASON -->`` (installs or starts the platform itself: ``make run``),
  ``<!-- verbatim: xfail — REASON -->`` (runs, known broken: it must fail; passing fails the test
  so the mark is removed), ``<!-- verbatim: file PATH -->`` (the block is written to PATH in the
  page's home, for the commands after it). Every skip, setup and xfail names its reason.

The instance differs from ``make run`` only where a test host needs it: free ports, the
single-person local backend (commands run as the test's account, as on a developer's machine),
and monitoring not started (Prometheus here would cost every other test CPU).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from stack import ROOT, VENV_BIN, Stack

SHELL = ("console", "bash", "sh", "shell")
PYTHON = ("python", "ipython", "py")
MARK = re.compile(r"^<!--\s*verbatim:\s*(skip|setup|xfail|file)\b\s*(?:—|--|-|:)?\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MAGIC = re.compile(r"^%%?yt\b", re.M)
COMMAND_WORDS = ("$ ", "yt ", "%yt", "%%yt", "make ", "ssh ", "kubectl ", "helm ", "curl ")
BLOCK_TIMEOUT = 240  # seconds: a block's `--follow` or `--wait` ends well before
FRESH = ROOT / "yitong.example.yaml"  # what `make run` starts with


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    body: str
    mark: str = ""  # skip | setup | xfail | file | ""
    reason: str = ""

    @property
    def runnable(self) -> bool:
        if self.mark == "file":
            return True
        if self.lang in SHELL:
            return True
        return self.lang in PYTHON and bool(MAGIC.search(self.body))

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.lang or 'no language'})"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, each with the verbatim mark on the line before it."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[i]):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.match(before.strip())
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        block = Block(name, start + 1, lang, "\n".join(body) + "\n")
        if mark:
            block.mark, block.reason = mark.group(1), mark.group(2)
        found.append(block)
    return found


def runnable_pages() -> list[str]:
    """Pages with a block to run (one whose blocks are all skip/setup starts no platform)."""
    return [
        str(p.relative_to(ROOT))
        for p in pages()
        if any(b.runnable and b.mark not in ("skip", "setup", "file") for b in blocks(p))
    ]


# -- the marks themselves (no platform needed) --------------------------------------------


def test_every_mark_is_well_formed():
    """A skip, setup or xfail says why; a file mark names a path; a mark sits before a fence;
    an unmarked command block says its language (an untagged one would silently escape this
    test; a few marked ones stay untagged because other tests cut them out of the page so)."""
    problems = []
    for path in pages():
        text = path.read_text().splitlines()
        marked_lines = {b.line for b in blocks(path) if b.mark}
        for n, line in enumerate(text, 1):
            if "verbatim:" in line and line.strip().startswith("<!--"):
                if not MARK.match(line.strip()):
                    problems.append(f"{path.name}:{n}: not a known verbatim mark: {line.strip()}")
                    continue
                nxt = next((k for k in range(n, len(text)) if text[k].strip()), None)
                if nxt is None or not FENCE.match(text[nxt]) or nxt + 1 not in marked_lines:
                    problems.append(f"{path.name}:{n}: a verbatim mark must be just before a fence")
        for b in blocks(path):
            if b.mark in ("skip", "setup", "xfail") and len(b.reason) < 8:
                problems.append(f"{b}: `verbatim: {b.mark}` without a reason")
            if b.mark == "file" and not b.reason:
                problems.append(f"{b}: `verbatim: file` without a path")
            first = next((ln for ln in b.body.splitlines() if ln.strip()), "")
            if not b.lang and not b.mark and first.startswith(COMMAND_WORDS):
                problems.append(f"{b}: a command block without a language (```console or ```bash)")
    assert not problems, "\n".join(problems)


def test_the_parser_reads_marks_and_bodies(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "text\n\n<!-- verbatim: skip — needs a Kubernetes cluster -->\n```bash\nkubectl get pods\n```\n"
        "```console\n$ yt vc ls\nVC ...\n```\n<!-- verbatim: file proj/a.yaml -->\n```yaml\na: 1\n```\n"
    )
    got = [(b.lang, b.mark, b.reason, b.body) for b in blocks(page)]
    assert got == [
        ("bash", "skip", "needs a Kubernetes cluster", "kubectl get pods\n"),
        ("console", "", "", "$ yt vc ls\nVC ...\n"),
        ("yaml", "file", "proj/a.yaml", "a: 1\n"),
    ]


@pytest.mark.parametrize(
    "body, script_has",
    [
        ("$ yt vc ls\nVC  RESOURCE\n", ["yt vc ls", "-ne 0 ]"]),  # exit 0 wanted: fails when non-zero
        ("$ yt data rm x --yes\nyt: there is no dataset x\n", ["yt data rm x --yes", "-eq 0 ]"]),
        ("$ cd ~/proj   # here\n$ ls\n", ["cd ~/proj   # here", "ls"]),
    ],
)
def test_console_blocks_become_checked_commands(body, script_has):
    script = console_script(body)
    for part in script_has:
        assert part in script


# -- running them --------------------------------------------------------------------------


def console_commands(body: str) -> list[tuple[str, bool]]:
    """``[(command, expected_to_fail)]`` of a console block: ``$ `` lines, ``\\`` continued."""
    out: list[tuple[str, bool]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            continue
        cmd = line[2:]
        while cmd.rstrip().endswith("\\") and i < len(lines):
            cmd += "\n" + lines[i].removeprefix("> ")
            i += 1
        follows = lines[i] if i < len(lines) else ""  # the first line of its output
        fails = follows.startswith("yt: ")
        out.append((cmd, fails))
    return out


def console_script(body: str) -> str:
    parts = ["set +e"]
    for n, (cmd, fails) in enumerate(console_commands(body), 1):
        bad = "-eq 0 ]" if fails else "-ne 0 ]"
        wanted = "a failure" if fails else "exit 0"
        parts += [
            cmd,
            f"__rc=$?; if [ $__rc {bad}; then echo 'verbatim: command {n} exited '$__rc' ({wanted} wanted): '"
            f"{shell_quote(cmd.splitlines()[0])} >&2; exit 99; fi",
        ]
    return "\n".join(parts) + "\n"


def shell_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def bash_script(body: str) -> str:
    trap = "trap 'echo \"verbatim: failed (exit $?): $BASH_COMMAND\" >&2' ERR"
    return f"set -eo pipefail\n{trap}\n{body}"


class Kernel:
    """One real yitong-python3 kernel for a page's magic blocks."""

    def __init__(self, env: dict[str, str], cwd: Path):
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="yitong-python3", env=env, cwd=str(cwd))

    def run(self, code: str) -> tuple[bool, str]:
        out: list[str] = []
        failed = False

        def collect(msg):
            nonlocal failed
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
                if content["name"] == "stderr" and re.search(r"^yt: ", content["text"], re.M):
                    failed = True
            elif kind == "error":
                out.append("\n".join(content["traceback"]))
                failed = True

        reply = self.kc.execute_interactive(code, output_hook=collect, timeout=BLOCK_TIMEOUT)
        return not failed and reply["content"]["status"] == "ok", "".join(out)

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """One fresh instance from the example settings, and its admin's token."""
    settings = yaml.safe_load(FRESH.read_text())
    settings["backends"]["local"]["mode"] = "single-person"
    settings["alerts"]["run"] = False
    stack = Stack(tmp_path_factory.mktemp("fresh"), settings, {"admin": "admin-pw-verbatim"}).start()
    try:
        yield stack, stack.token("admin")
    finally:
        stack.stop()


def terminal_env(stack: Stack, token: str, home: Path) -> dict[str, str]:
    """What a terminal of the admin's server has on a fresh install: the spawner's own
    ``server_env`` (the fresh install's VC and first profile, the local backend's loopback API
    URL), the hub's token variables, the platform's ``bin`` first on PATH."""
    from yitong_spawner.builders import server_env

    env = {k: v for k, v in os.environ.items() if not k.startswith(("YITONG_", "JUPYTERHUB_", "YT_"))}
    vcs = yaml.safe_load(FRESH.read_text())["vcs"]
    vc = next(iter(vcs))  # the one VC of a fresh install (the docs call it `default`)
    env.update(server_env(stack.platform_direct, vc, vcs[vc]["profiles"][0], kernel="python3"))
    env.update(
        HOME=str(home),
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        JUPYTERHUB_API_TOKEN=token,
        JUPYTERHUB_USER="admin",
        PYTHONUNBUFFERED="1",
    )
    return env


def run_shell(block: Block, env: dict[str, str], cwd: Path) -> tuple[bool, str]:
    script = console_script(block.body) if block.lang == "console" else bash_script(block.body)
    try:
        r = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        return False, f"timed out after {BLOCK_TIMEOUT}s\n{e.stdout or ''}\n{e.stderr or ''}"
    return r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def run_page(path: Path, env: dict[str, str], home: Path) -> list[str]:
    """Run a page's blocks in order in ``home``; what went wrong, one entry per block."""
    kernel: Kernel | None = None
    problems: list[str] = []
    try:
        for block in blocks(path):
            if not block.runnable or block.mark in ("skip", "setup"):
                continue
            if block.mark == "file":
                target = home / block.reason.removeprefix("~/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.body)
                continue
            if block.lang in SHELL:
                ok, output = run_shell(block, env, home)
            else:
                kernel = kernel or Kernel(env, home)
                ok, output = kernel.run(block.body)
            if block.mark == "xfail":
                if ok:
                    problems.append(f"{block}: passes now: remove its `verbatim: xfail` ({block.reason})")
            elif not ok:
                problems.append(f"{block}:\n{block.body}--- got:\n{output}")
    finally:
        if kernel:
            kernel.close()
    return problems


def test_a_page_runs_in_order_and_xfail_is_strict(tmp_path):
    """The runner itself, on a page of plain shell (no platform): a file mark, a `cd` that holds
    within a console block, a stated failure, a skip, and xfails that fail (fine) or pass (not)."""
    page = tmp_path / "walk.md"
    page.write_text(
        "<!-- verbatim: file proj/a.txt -->\n```text\nhello\n```\n"
        "```console\n$ cd proj   # the file above is here\n$ grep -q hello a.txt\n"
        "$ yt-no-such-command\nyt: it fails, as the page says\n```\n"
        "<!-- verbatim: skip — would fail: never run -->\n```bash\nexit 3\n```\n"
        "<!-- verbatim: xfail — known broken, fails -->\n```bash\nfalse\n```\n"
        "<!-- verbatim: xfail — fixed since, passes -->\n```bash\ntrue\n```\n"
        "```bash\ntest -e proj/a.txt\nfalse   # the second command fails\n```\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    problems = run_page(page, env, home)
    assert len(problems) == 2, problems
    assert problems[0].startswith("walk.md:20 (bash): passes now: remove its `verbatim: xfail` (fixed since")
    assert problems[1].startswith("walk.md:23 (bash):") and "verbatim: failed (exit 1): false" in problems[1]


@pytest.mark.e2e
@pytest.mark.parametrize("page", runnable_pages())
def test_page_runs_as_written(page, fresh, tmp_path):
    stack, token = fresh
    home = tmp_path / "home"
    home.mkdir()
    problems = run_page(ROOT / page, terminal_env(stack, token, home), home)
    assert not problems, "\n\n".join(problems)


if __name__ == "__main__":  # list what would run: python tests/e2e/test_docs_verbatim.py
    for p in pages():
        for b in blocks(p):
            if b.runnable:
                print(f"{b}  {b.mark or 'run'}  {b.reason}", file=sys.stdout)
