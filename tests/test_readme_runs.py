"""The README works when copied (issue 17, point 4): every shell and Python block of README.md marked
`<!-- runnable: shell NAME -->` or `<!-- runnable: python NAME -->` (the line before the fence) runs,
in order, against a real server, and prints what the README says it prints.

What the test prepares is what the README says a user has: the demo data of `./dev run` (its
`setup_demo`, run as `./dev run` runs it), a real uvicorn server on the test database (SQLite or
PostgreSQL, whichever this run uses), and for the OAuth blocks an agent application of the demo
agent, whose client id and secret admin shows once: they reach the blocks as `CLIENT_ID` and
`CLIENT_SECRET`, the README's own names. Every token, run id and file the blocks use they make
themselves with the README's commands (`create_identity`, `start_run`, …).

How the blocks run, as one reader in one terminal at the repository root would:
- shell blocks with `bash -euo pipefail`, Python blocks saved as a file in the repository root and
  run with `.venv/bin/python FILE`; each with a timeout, each must exit 0;
- the shell variables and functions a block leaves behind are there for the next block (what one
  terminal keeps between pastes); a Python block sees what the shell blocks exported;
- the working directory is a scratch copy of the checkout (a folder of symlinks to its entries, and
  `../shared` beside it when the spec is there), so files the blocks write (`screening.txt`,
  `audit.jsonl`, `conformance.xml`) land in the test's temporary folder, not in the checkout;
- the one substitution: the line `export AGENTPROCESS_URL=http://127.0.0.1:8000` (where `./dev run`
  serves) gets the live server's address. Every other runnable line names the server as
  `$AGENTPROCESS_URL`, which `test_every_code_block_of_the_readme_is_marked` holds the README to.

Not runnable, each marked `<!-- not runnable: why -->` in the README:
- `./dev run` / `./dev test` (set-up): the first serves until Ctrl-C (the test starts the same server
  its own way and runs `setup_demo` as it does); the second is the whole suite this test is part of;
- deploying on PostgreSQL + Redis: it needs a production database, Redis, a mail server and a real
  `SECRET_KEY`, and starts long-running services (`./dev run` and this test cover the same commands
  on embedded defaults);
- benchmarks (`bench/run`): 3 to 10 minutes, and each creates its own PostgreSQL database;
- backing up the whole server (`pg_dump`, `pg_restore`): it needs a production PostgreSQL with the
  two roles and a backup host;
- chat channels (`webhooks add … --format slack`): they need a Slack or Teams workspace's
  incoming-webhook URL (tests/test_webhooks.py sends to receivers in both formats).

The reader's terminal and the server share the files folder (`MEDIA_ROOT`), as `./dev run`'s do
(`var/uploads`): the restore drill backs up the files the blocks before it uploaded.
"""

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import service_unavailable
from tests.support.live import ROOT, database_url, start_live_server

README = ROOT / "README.md"
SERVES_AT = "http://127.0.0.1:8000"
URL_LINE = f"export AGENTPROCESS_URL={SERVES_AT}"
CODE_LANGUAGES = {"bash": "shell", "sh": "shell", "shell": "shell", "python": "python", "py": "python"}
MARKER = re.compile(r"<!-- (?:runnable: (?P<kind>shell|python) (?P<name>[a-z0-9-]+)|not runnable: (?P<why>.+\S)) -->")
FENCE = re.compile(r"```(?P<language>\S*)\s*$")
BLOCK_TIMEOUT_SECONDS = 60
OUTPUT_SHOWN = 6000  # characters of each stream a failure shows (the end: where a traceback says why)
# What each runnable block must print (regular expressions searched in its stdout), from the README's
# own words: the `# …` result lines under its commands and the prose around it.
EXPECTED_OUTPUT = {
    "import-example": [r"^supplier-onboarding unchanged, version 1 is current \(3e7095c5[0-9a-f]{56}\)$"],
    "agent-token": [],
    "mcp-get-work": [r'^\{"ok": true, "data": \{"items": \['],
    "rest-walkthrough": [
        r'^\{"tool":"claim","arguments":\{"runId":"r_\w+","stepId":"check_vendor","requestId":"<new UUID>"\}\}$',
        r'^\[\{"id":"check_vendor","kind":"agent","state":"done"\},\{"id":"approve","kind":"approve","state":"waiting",',
        r'^\{"state":"ended","outcome":"onboarded"\}$'],
    "oauth-token": [r'"token_type": ?"Bearer"', r'"scope": ?"tools"'],
    "oauth-mcp": [r'^\{"ok": true, "data": \{"items": \['],
    "client-worker": [r"^steps completed: 1; r_\w+ now waits for: approve$"],
    "conformance-quick-start": [r"^describe +\d+ +pass ", r"^identities +\d+ +pass ",
                                # a quick check leaves most MUSTs unchecked, and says so (conformance/musts.py)
                                r"^\d+ scenarios over mcp, \d+ checks, \d+ calls in [\d.]+ s: passed, \d+ MUSTs not "
                                r"checked \([\w.,\- ]+\); \d+ MUSTs not observable over the protocol \(--coverage\)$"],
    "audit-export": [r'"kind":"decided","actor":\{"kind":"person","ref":"fin@example.com"\}'],
    "webhooks-cli": [r"^\d+\thttp://127\.0\.0\.1:9/hooks/agentprocess\tkinds: run\.ended,run\.failed\tprocess: "
                     r"supplier-onboarding\ttest runs: no\tactive$", r"^whsec_[A-Za-z0-9+/=]{40,}$",
                     r"^the old secret still signs until 20\d\d-", r"^removed webhook subscription \d+ \(http://127"],
    "backup-restore-drill": [r"^backed up organization default to backup-default.tar.gz in [\d.]+ s: \d+ files",
                             r"^restored organization default from backup-default.tar.gz in [\d.]+ s$",
                             r"^verified: (\d+) stored files against their uploads' SHA-256 \(\1 written\), \d+ "
                             r"process versions' content hashes, \d+ runs' snapshots$"],
}
# Files a block writes (relative to the working directory) and what must be in them.
EXPECTED_FILES = {
    "audit-export": {"audit.jsonl": r'"kind":"run_started"', "october.csv": r"^at,kind,actor,"},
    "conformance-quick-start": {"conformance.xml": r'<testcase [^>]*name="describe"'},
    "client-worker": {"screening.txt": r"no hits"},
}
# Bash's own variables: not carried from one block to the next (the rest is what the reader set).
SAVE_STATE = r"""
{ for __readme_name in $(compgen -v); do
    case " $(cat "$READMETEST_BASH_OWN") " in *" $__readme_name "*) continue;; esac
    declare -p "$__readme_name" 2>/dev/null || true
  done
  declare -f; } > "$READMETEST_STATE.next" && mv "$READMETEST_STATE.next" "$READMETEST_STATE"
"""


@dataclass
class Block:
    kind: str  # shell | python
    name: str
    line: int  # of the opening fence in README.md, 1-based
    text: str


@dataclass
class Marked:
    runnable: list[Block]
    not_runnable: list[tuple[int, str]]  # (line, why)
    unmarked: list[int]  # lines of shell/Python fences with neither marker
    misplaced: list[str]  # markers not right above a shell/Python fence, or naming the other kind


def readme_blocks(text: str) -> Marked:
    lines = text.splitlines()
    found = Marked([], [], [], [])
    for number, line in enumerate(lines, 1):
        marker = MARKER.fullmatch(line.strip())
        if marker is None:
            continue
        below = lines[number] if number < len(lines) else ""
        fence = FENCE.fullmatch(below)
        language = CODE_LANGUAGES.get(fence["language"]) if fence else None
        if language is None or marker["kind"] not in (None, language):
            found.misplaced.append(f"README.md:{number}: {line.strip()} is above {below!r}")
    index = 0
    while index < len(lines):
        fence = FENCE.fullmatch(lines[index])
        if not fence:
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"README.md:{index + 1}: a code block that never closes"
        if fence["language"] in CODE_LANGUAGES:
            marker = MARKER.fullmatch(lines[index - 1].strip()) if index else None
            if marker is None:
                found.unmarked.append(index + 1)
            elif marker["why"]:
                found.not_runnable.append((index + 1, marker["why"]))
            else:
                found.runnable.append(Block(marker["kind"], marker["name"], index + 1,
                                            "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return found


def test_every_code_block_of_the_readme_is_marked():
    """Each shell and Python block says whether it runs; runnable ones have a name the test knows,
    and reach the server only through $AGENTPROCESS_URL (set once)."""
    marked = readme_blocks(README.read_text())
    assert marked.misplaced == [], "a marker goes on the line right above a shell or Python fence of its kind"
    assert marked.unmarked == [], (
        f"README.md lines {marked.unmarked}: a shell or Python block needs `<!-- runnable: shell|python NAME -->` "
        "or `<!-- not runnable: why -->` on the line before its fence")
    names = [block.name for block in marked.runnable]
    assert len(names) == len(set(names)), names
    assert set(names) == set(EXPECTED_OUTPUT), "every runnable block has its expected output here, and only those"
    assert set(EXPECTED_FILES) <= set(names)
    # set-up, deploying, benchmarks, pg_dump, chat channels (the docstring)
    assert len(marked.not_runnable) == 5, marked.not_runnable
    hard_coded = [(block.name, line) for block in marked.runnable for line in block.text.splitlines()
                  if SERVES_AT in line and line.split("#")[0].strip() != URL_LINE]
    assert hard_coded == [], f"name the server as $AGENTPROCESS_URL in runnable blocks: {hard_coded}"
    assert sum(block.text.count(URL_LINE) for block in marked.runnable) == 1


def checkout_copy(scratch: Path) -> Path:
    """A folder of symlinks to the checkout's entries (and ../shared beside it): commands run as in
    the repository root, while what they write stays in the scratch folder."""
    workdir = scratch / "main"
    workdir.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".git", "db.sqlite3"} and not entry.name.startswith("db.sqlite3-"):
            (workdir / entry.name).symlink_to(entry)
    if (ROOT.parent / "shared").is_dir():
        (scratch / "shared").symlink_to(ROOT.parent / "shared")
    return workdir


def run_shell(script: str, workdir: Path, env: dict) -> subprocess.CompletedProcess:
    """bash -euo pipefail in its own process group, so a timeout stops whatever the block started."""
    process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=workdir, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=BLOCK_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n(stopped after {BLOCK_TIMEOUT_SECONDS} s)"
        return subprocess.CompletedProcess(process.args, -9, stdout, stderr)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def report(block: Block, ran: str, done: subprocess.CompletedProcess, problem: str, server_log: str) -> str:
    return (f"README.md:{block.line}: the {block.kind} block {block.name!r} {problem}\n"
            f"--- the block as run ---\n{ran}--- exit {done.returncode}; stdout (its end) ---\n"
            f"{done.stdout[-OUTPUT_SHOWN:]}--- stderr (its end) ---\n{done.stderr[-OUTPUT_SHOWN:]}"
            f"--- the server's log meanwhile (its end) ---\n{server_log[-OUTPUT_SHOWN:]}")


@pytest.mark.live
def test_the_readme_runs_as_written(transactional_db, tmp_path):
    missing = [tool for tool in ("curl", "jq") if shutil.which(tool) is None]
    if missing:  # .ci/run installs them
        service_unavailable(f"the README's curl walk-through needs {' and '.join(missing)}, not installed here")
    marked = readme_blocks(README.read_text())
    assert marked.runnable, "no runnable blocks in README.md"
    db_url = database_url(connection.settings_dict)
    workdir = checkout_copy(tmp_path)
    # The reader's terminal: the test's environment (PATH, the database of this run), nothing of the
    # README's own variables.
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTPROCESS_")}
    env.update(DATABASE_URL=db_url, PYTHONDONTWRITEBYTECODE="1")

    demo = subprocess.run([".venv/bin/python", "manage.py", "setup_demo"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # as ./dev run does
    assert demo.returncode == 0, demo.stdout + demo.stderr
    env.update(oauth_application_of_the_demo_agent())

    state, bash_own = tmp_path / "shell-state", tmp_path / "bash-own-variables"
    bash_own.write_text(subprocess.run(["bash", "-c", "compgen -v"], env={}, capture_output=True, text=True,
                                       check=True).stdout.replace("\n", " ") + " __readme_name")
    state.write_text("")
    env.update(READMETEST_STATE=str(state), READMETEST_BASH_OWN=str(bash_own))

    server_dir = tmp_path / "server"
    server_dir.mkdir()
    env.update(MEDIA_ROOT=str(server_dir / "media"))  # the live server's (tests/support/live.py)
    with start_live_server(db_url, server_dir) as server:
        for block in marked.runnable:
            began = time.monotonic()
            run_block(block, server, workdir, env)
            print(f"README.md:{block.line} {block.kind} {block.name}: ran in {time.monotonic() - began:.1f} s")
    # What the blocks wrote in the repository root is ignored by git: a reader's `git status` stays
    # clean (issue 21, point 11). The readme_*.py files are this test's copies of what the reader
    # saves as get_work.py and worker.py.
    left = sorted(entry.name for entry in workdir.iterdir()
                  if not entry.is_symlink() and not entry.name.startswith("readme_"))
    assert left, "the README's blocks wrote nothing here: this check would prove nothing"
    tracked_by_mistake = [name for name in left + ["get_work.py", "worker.py"] if subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", name], check=False).returncode != 0]
    assert tracked_by_mistake == [], f"README blocks leave files git would show: {tracked_by_mistake}"


def run_block(block: Block, server, workdir: Path, env: dict) -> None:
    """Run one block as the reader would, then check its exit status, its output and its files."""
    text = block.text.replace(URL_LINE, f"export AGENTPROCESS_URL={server.url}")
    if block.kind == "shell":
        ran = text
        script = f'source "$READMETEST_STATE"\n{text}\n{SAVE_STATE}'
    else:
        path = workdir / f"readme_{block.name.replace('-', '_')}.py"
        path.write_text(text)
        ran = f"# saved as {path.name}, run with .venv/bin/python {path.name}\n{text}"
        script = f'source "$READMETEST_STATE"\n.venv/bin/python {path.name}\n'
    log_from = server.log_size()
    done = run_shell(script, workdir, env)

    def failure(problem: str) -> str:
        return report(block, ran, done, problem, server.log(log_from))

    assert done.returncode == 0, failure("failed")
    for pattern in EXPECTED_OUTPUT[block.name]:
        assert re.search(pattern, done.stdout, re.MULTILINE), failure(f"did not print what the README says (/{pattern}/)")
    for name, pattern in EXPECTED_FILES.get(block.name, {}).items():
        written = workdir / name
        assert written.is_file() and not written.is_symlink(), failure(f"wrote no {name}")
        assert re.search(pattern, written.read_text(), re.MULTILINE), failure(
            f"wrote {name} without /{pattern}/:\n{written.read_text()[:2000]}")


def oauth_application_of_the_demo_agent() -> dict[str, str]:
    """What admin's Agent applications → Add shows once (README, "Register an agent")."""
    from kernel.models import Agent
    from kernel.oauth import register_agent_application

    link, secret = register_agent_application(Agent.objects.get(name="demo-agent"))
    return {"CLIENT_ID": link.application.client_id, "CLIENT_SECRET": secret}
