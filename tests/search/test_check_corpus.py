"""The committed corpus of counterexamples replays exactly on every run (like Hypothesis's
``@example``, but as scenario files that do not depend on Hypothesis's version)."""

from pathlib import Path

import pytest

from acksim.search.replay import history_digest, replay_verdict
from acksim.scenario import load
from acksim.judges.summary import build_summary
from acksim.world.core import simulate

CORPUS = sorted((Path(__file__).resolve().parents[1] / "corpus").glob("*.toml"))


def test_the_corpus_holds_a_counterexample_of_every_known_bad_candidate():
    names = {p.name for p in CORPUS}
    assert len(CORPUS) >= 6
    for needle in ("no_renewed_check", "no_version_check", "ack-before-processing", "autocommit-effect_with_outbox",
                   "no-unique-markers", "read-committed-no_cleanup", "no_missing_account_check-processor_error"):
        assert any(needle in n for n in names), needle


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_each_counterexample_replays_record_for_record(path):
    scenario = load(path)
    assert scenario.expect is not None and (scenario.expect.violated or scenario.expect.processor_error)
    outcome = simulate(scenario)
    summary = build_summary(scenario, outcome)
    assert history_digest(outcome.history) == scenario.expect.history_sha256
    assert replay_verdict(scenario, outcome.history, summary).startswith("replay: reproduced")
    violated = [n for n, v in summary["invariants"].items() if not v["holds"]]
    assert violated == list(scenario.expect.violated)
