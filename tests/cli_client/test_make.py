"""``make run`` / ``make test`` install only when needed (issue #8), read off ``make -n``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def planned(target: str, venv: Path) -> str:
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_run_installs_on_a_fresh_machine_then_only_when_pyproject_changes(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    fresh = planned("run", venv)
    assert "-m venv" in fresh and "pip install -q -e ." in fresh and "openbot serve" in fresh

    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".installed").touch()  # installed after pyproject.toml last changed
    again = planned("run", venv)
    assert "pip" not in again and "openbot serve" in again

    os.utime(venv / ".installed", (0, 0))  # pyproject.toml is now newer than the install
    assert "pip install -q -e ." in planned("run", venv)


def test_test_installs_the_dev_extras_once(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    assert "pip install -q -e '.[dev]'" in planned("test", venv)
    (venv / ".installed-dev").touch()
    assert "pip" not in planned("test", venv)
