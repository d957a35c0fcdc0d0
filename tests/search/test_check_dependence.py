"""A finding that goes away when a drawn setting goes back to the base scenario's names that
setting: a configuration limit is told apart from a design bug."""

import time

from acksim.model import process
from acksim.model.candidates import CANDIDATES
from acksim.search.check import ExampleResult, base_scenario, run_check
from acksim.search.dependence import dependence, with_setting
from acksim.search.findings import render_findings


def slow(job, accounts, cleanup_store, outbox):
    """The reference processor after 1.5 s of (virtual) work: longer than a 1 s execution limit."""
    time.sleep(1.5)
    process(job, accounts, cleanup_store, outbox)


def test_a_finding_of_a_drawn_time_limit_names_the_settings_it_needs():
    report = run_check(slow, base_scenario(), max_examples=200, seed=0)
    assert list(report.findings) == ["no_lost_work"]
    assert report.depends["no_lost_work"] == (
        "workers.execution_timeout_s = 1.0 (none with the base scenario's 0.0)",
        "queue.max_receive_count = 0 (none with the base scenario's 5)")
    text = "\n".join(render_findings(report, ["/tmp/x.toml"]))
    assert "depends on drawn settings (a configuration limit as much as the design's): " \
           "workers.execution_timeout_s = 1.0" in text


def test_a_design_bug_depends_on_no_drawn_setting():
    candidate = CANDIDATES["no-renewed-check"]
    report = run_check(candidate.processor, base_scenario(None, candidate.design), max_examples=60, seed=0)
    assert report.depends == {"no_cleanup_after_renewal": ()}


def _result(failures):
    return ExampleResult(tuple(failures), {}, {}, (), [])


def test_each_differing_setting_is_tried_alone_and_hung_processors_are_not_tried():
    base = base_scenario()
    assert base.queue.ack_by == "receipt" and base.queue.visibility_timeout_s == 5.0
    example = with_setting(with_setting(base, "queue", "visibility_timeout_s", 1.25), "queue", "ack_by", "message_id")
    assert example.queue.visibility_timeout_s == 1.25 and example.queue.ack_by == "message_id"
    tried = []

    def run(scenario):
        tried.append((scenario.queue.visibility_timeout_s, scenario.queue.ack_by))
        return _result([] if scenario.queue.ack_by == base.queue.ack_by else ["at_most_once_effect"])

    assert dependence("at_most_once_effect", example, base, run) == (
        "queue.ack_by = 'message_id' (none with the base scenario's 'receipt')",)
    assert tried == [(5.0, "message_id"), (1.25, "receipt")]
    assert dependence("processor_hung", example, base, run) == () and len(tried) == 2
