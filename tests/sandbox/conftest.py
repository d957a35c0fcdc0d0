"""Fixtures of the process-image and virtual-clock tests: user code is written into a
temporary directory put on ``sys.path``, so every test imports packages nobody imported before."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """``write({"mypkg/__init__.py": source, ...})`` writes dedented files under a fresh
    directory on ``sys.path`` and returns the directory. The fixture fails the test if user
    modules of that directory are left in ``sys.modules``."""
    root = tmp_path / "src"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))

    def write(files: dict[str, str]) -> Path:
        for rel, source in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
        return root

    yield write
    leaked = [n for n, m in list(sys.modules.items())
              if str(getattr(m, "__file__", "") or "").startswith(str(root))]
    for n in leaked:
        del sys.modules[n]
    assert not leaked, f"user modules leaked into sys.modules: {leaked}"
