"""A seed gives one search, whatever else the process has imported (``acksim.search.constants``)."""

import importlib
import sys

from acksim.search.check import base_scenario, search_test

# a module of the user's own (local, so Hypothesis reads its literals): integers inside the
# ranges the strategies draw from (account counts, deadline steps, delivery numbers, seeds)
LITERALS = "VALUES = [" + ", ".join(str(n) for n in (*range(2, 95), 4_294_967_290, 123_456_789)) + "]\n"


def _drawn(base, seed: int) -> list[str]:
    seen = []
    search_test(lambda scenario: seen.append(scenario.model_dump_json()), base, 40, seed)()
    return seen


def test_a_newly_imported_module_of_literals_does_not_change_the_examples_of_a_seed(tmp_path, monkeypatch):
    base = base_scenario()
    before = _drawn(base, 7)
    (tmp_path / "acksim_seed_literals.py").write_text(LITERALS)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("acksim_seed_literals")
    try:
        after = _drawn(base, 7)
    finally:
        sys.modules.pop("acksim_seed_literals", None)
    assert len(before) == 40 and after == before
    assert _drawn(base, 8) != before  # another seed, another search
