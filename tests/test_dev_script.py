"""The README's set-up commands tell a new reader what they are doing (issue 21, point 11): the first
`./dev run` used to sit silent for about 70 s while pip installed."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_first_run_says_what_it_installs_before_anything_else(tmp_path):
    """./dev on a fresh folder: it says it creates .venv, that installing takes a minute or two,
    and names each package as pip gets to it. (A one-package requirements file keeps this short;
    the suite's own run then stops at the missing pytest, which is not what this test is about.)"""
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    (tmp_path / "requirements.txt").write_text("six==1.16.0\n")
    done = subprocess.run(["bash", "dev", "test"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if not line.startswith("WARNING")]
    assert lines[0].startswith("== Creating .venv with "), done.stdout + done.stderr
    assert lines[1] == ("== Installing the Python packages of requirements.txt into .venv "
                        "(a minute or two the first time)")
    assert lines[2].startswith("   six==1.16.0") and lines[3] == "   done."
    # The second time, nothing to install: straight to the tests.
    again = subprocess.run(["bash", "dev", "test"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.stdout.splitlines()[0] == "== tests on SQLite", again.stdout
