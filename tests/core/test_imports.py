"""Every module of the package imports on its own, whichever is imported first (an import cycle
hides until some entry point — a benchmark, a script — happens to start from the wrong module)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openbot

_CHECK = """
import importlib, pkgutil, sys
import openbot
names = sorted(m.name for m in pkgutil.walk_packages(openbot.__path__, "openbot."))
failed = []
for name in names:
    for loaded in [k for k in sys.modules if k == "openbot" or k.startswith("openbot.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_first() -> None:
    root = Path(openbot.__file__).parent
    assert (root / "runtime").is_dir()
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
