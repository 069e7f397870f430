"""The wheel a user installs: built without a warning, and carrying the package's data files."""

import os
import re
import shutil
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What an installed awele reads besides its modules: the evaluation weights, the oracle's page
# and the marker that tells type checkers the package is typed.
DATA_FILES = [
    "solver/py.typed",
    "solver/data/evaluation-v1.json",
    "solver/data/evaluation-v2-patterns.json",
    "solver/web/static/index.html",
    "solver/web/static/app.js",
    "solver/web/static/style.css",
    "solver/web/static/docs.html",
    "solver/web/static/docs.js",
    "solver/web/static/docs.css",
]

# setuptools' warnings are classes named ...Warning (SetuptoolsDeprecationWarning, and the
# plain _Warning of "Package would be ignored"); pip shows them with -v.
WARNING = re.compile(r"\w*Warning\b|would be ignored", re.I)


def _source_copy(folder):
    # The files a clone has, without this checkout's caches and build outputs.
    folder.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(os.path.join(ROOT, name), folder / name)
    shutil.copytree(os.path.join(ROOT, "solver"), folder / "solver",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    return folder


def test_the_wheel_builds_without_a_warning_and_carries_the_data_files(tmp_path):
    source = _source_copy(tmp_path / "source")
    out = tmp_path / "wheels"
    # pip's own warnings are about where it runs, not about the package: byte-compiling skipped
    # (PYTHONDONTWRITEBYTECODE) and, as root outside a virtual environment (CI), the root user.
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "PIP_ROOT_USER_ACTION": "ignore"}
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-v", "-w", str(out)],
                          capture_output=True, text=True, timeout=600, env=environment)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    warnings = [line for line in log.splitlines() if WARNING.search(line)]
    assert not warnings, "\n".join(warnings)
    (wheel,) = out.glob("awele-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(name for name in names if name.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode()
    missing = [name for name in DATA_FILES if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    assert "solver/cli.py" in names and "solver/web/app.py" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: MIT" in metadata.splitlines()
    assert not [name for name in names if name.startswith("tests/") or "__pycache__" in name]
