"""docs/architecture.md stays true: every ``acksim`` module, package or name it mentions exists,
and every package of ``sim/`` is on the page."""

import importlib
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
NAMES = sorted(set(re.findall(r"\backsim(?:\.[A-Za-z_]\w*)+", PAGE)))


def _resolve(dotted: str) -> object:
    """The module ``dotted`` names, or the attribute of its longest importable prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:  # a name inside a module, not a submodule
            spec = None
        if spec is not None:
            obj = importlib.import_module(module)
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            return obj
    raise ModuleNotFoundError(dotted)


def test_the_page_names_what_exists():
    assert len(NAMES) > 20
    missing = []
    for name in NAMES:
        try:
            _resolve(name)
        except (ModuleNotFoundError, AttributeError) as exc:
            missing.append(f"{name}: {exc}")
    assert missing == []


def test_every_package_is_on_the_page():
    packages = sorted("acksim." + ".".join(p.parent.relative_to(ROOT / "sim").parts)
                      for p in (ROOT / "sim").rglob("__init__.py") if p.parent != ROOT / "sim")
    assert "acksim.world" in packages
    assert [p for p in packages if p not in PAGE] == []
