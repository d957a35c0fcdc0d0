"""docs/architecture.md stays true: every ``acksim`` module, package or name it mentions exists,
and every package of ``sim/`` is on the page."""

import re
from pathlib import Path

from helpers.doc_blocks import name_problems

ROOT = Path(__file__).parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()
NAMES = sorted(set(re.findall(r"\backsim(?:\.[A-Za-z_]\w*)+", PAGE)))


def test_the_page_names_what_exists():
    assert len(NAMES) > 20
    assert name_problems(PAGE) == []


def test_every_package_is_on_the_page():
    packages = sorted("acksim." + ".".join(p.parent.relative_to(ROOT / "sim").parts)
                      for p in (ROOT / "sim").rglob("__init__.py") if p.parent != ROOT / "sim")
    assert "acksim.world" in packages
    assert [p for p in packages if p not in PAGE] == []
