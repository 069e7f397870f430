"""scripts/hostile.py's groups that need no tables of their own, run as CI runs
the suite, so that the cases of the hostile passes stay held."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _holds(folder, group: str, least: int, timeout: int) -> None:
    """scripts/hostile.py --only GROUP, run in `folder`, passes every case, and has at least `least`."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "hostile.py"), "--only", group],
                          capture_output=True, text=True, timeout=timeout, cwd=folder,
                          env={**os.environ, "PYTHONPATH": ROOT})
    summary = done.stdout.strip().splitlines()
    assert done.returncode == 0, "\n".join(line for line in summary if line.startswith(("FAIL", "  FAIL"))) \
        or done.stdout[-2000:] + done.stderr[-2000:]
    assert summary[-1].endswith(" 0 failed") and int(summary[-1].split()[0]) >= least, summary[-1]


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
def test_the_engine_inputs_group_holds_every_case(tmp_path):
    """UCI lines no GUI should send, weights files that are no weights, the
    fit's arguments and output, match specs that make no sense (issue 39)."""
    _holds(tmp_path, "engine inputs", least=50, timeout=900)


# The read side (issue 54) ------------------------------------------------------------------


@pytest.mark.slow  # 40-90 s (it builds tables to 16): CI runs it on its own line (.ci/run)
def test_the_read_side_group_holds_every_case(tmp_path):
    """A forced cycle valued under the game's repetition rule (+2, not the
    tables' +0 shown exact), a first UCI go without isready in and above the
    tables, /docs with nothing from elsewhere, analyse's rows as they come."""
    _holds(tmp_path, "read side", least=13, timeout=900)


# Build side (issue 54) ------------------------------------------------------------------------------


@pytest.mark.slow  # 5-10 min: it builds layer 13 about a hundred times
def test_the_build_journals_group_holds_every_case(tmp_path):
    """Journals and checkpoints edited field by field (their CRC-32 made
    right again), scratch files damaged or planted, a kill between a
    table's rename and its clearing, two builds on one scratch folder,
    --scratch shared with the tables or checkpoint folder (issue 54); the
    lean stages' journal edited too (issue 50: 60 cases)."""
    _holds(tmp_path, "build journals", least=55, timeout=1800)
