"""A retry the processor asks for (``RetryLater``, or a class ``workers.retryable_errors``
names): rolled back, nacked with its Retry-After or the queue's backoff, counted, never a
finding; a job that always asks ends in the dead-letter queue at the receive limit. Exact
virtual times on the one-account tiny world (deadline 100 s, 1 s a store call)."""

from acksim.judges.summary import build_summary
from acksim.model import process
from acksim.model.errors import RetryLater
from acksim.world.core import World


class Throttled(Exception):
    """A rate limit, as a user's own code raises it."""


def _run(scenario, processor):
    world = World(scenario, processor)
    try:
        outcome = world.run()
    finally:
        world.close()
    return outcome, build_summary(scenario, outcome)


def _trace(outcome):
    kinds = ("delivered", "retry_requested", "tx_rolled_back", "nacked", "tx_committed", "acked", "dead_lettered",
             "processor_error")
    return [(r.time, r.kind, r.receive_count, r.detail) for r in outcome.history if r.kind in kinds]


def twice_then_done(job, accounts, cleanup_store, outbox):
    """Asks for a retry on the first two receives (one with a Retry-After of 7 s), then does the job."""
    account = accounts.get(job.account_id)
    twice_then_done.calls = getattr(twice_then_done, "calls", 0) + 1
    if twice_then_done.calls == 1:
        raise RetryLater("rate limited", delay_s=7.0)
    if twice_then_done.calls == 2:
        raise RetryLater("still busy")
    assert account is not None
    process(job, accounts, cleanup_store, outbox)


def test_a_retry_is_a_nack_with_its_retry_after_or_the_queues_backoff(tiny):
    twice_then_done.calls = 0
    scenario = tiny(queue={"nack_backoff_base_s": 3.0, "nack_backoff_max_s": 60.0})
    outcome, summary = _run(scenario, twice_then_done)
    assert _trace(outcome) == [
        (100.0, "delivered", 1, ""),
        (101.0, "retry_requested", 1, "RetryLater: rate limited"),   # get@101, then the raise
        (101.0, "tx_rolled_back", 1, "retry_requested"),
        (101.0, "nacked", 1, ""),
        (108.0, "delivered", 2, ""),                                  # its Retry-After: 7 s
        (109.0, "retry_requested", 2, "RetryLater: still busy"),
        (109.0, "tx_rolled_back", 2, "retry_requested"),
        (109.0, "nacked", 2, ""),
        (115.0, "delivered", 3, ""),                                  # the queue's backoff: 3 * 2 = 6 s
        (121.0, "tx_committed", 3, "2"),                             # its own get@116, then the reference's 4 calls
        (121.0, "acked", 3, ""),
    ]
    assert summary["counts"]["retries_requested"] == 2 and summary["counts"]["processor_errors"] == 0
    assert summary["verdict"] == "PASS"


def always_throttled(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise Throttled("429")


def test_a_named_class_asks_for_retries_until_the_dead_letter_queue(tiny):
    scenario = tiny(queue={"max_receive_count": 3, "nack_backoff_base_s": 1.0},
                    workers={"retryable_errors": [f"{__name__}:Throttled"]})
    outcome, summary = _run(scenario, always_throttled)
    trace = _trace(outcome)
    assert [t for t in trace if t[1] in ("delivered", "dead_lettered")] == [
        (100.0, "delivered", 1, ""), (102.0, "delivered", 2, ""), (105.0, "delivered", 3, ""),  # backoff 1, 2, 4 s
        (110.0, "dead_lettered", 3, "max_receive_count")]
    assert summary["counts"]["retries_requested"] == 3 and summary["counts"]["processor_errors"] == 0
    assert summary["counts"]["dead_lettered"] == 1
    assert all(v["holds"] for v in summary["invariants"].values())  # dead-lettered work is accounted for
    # the job never got done: the default dead-letter share threshold says so, no invariant does
    assert [r["name"] for r in summary["reasons"]] == ["dead_lettered_share"]


def test_without_the_name_the_same_error_is_the_processors_own(tiny):
    outcome, summary = _run(tiny(queue={"max_receive_count": 1}), always_throttled)
    assert [t[1] for t in _trace(outcome)][:2] == ["delivered", "processor_error"]
    assert summary["counts"]["processor_errors"] == 1 and summary["counts"]["retries_requested"] == 0


def test_retryable_error_names_are_checked(tiny):
    import pytest
    from acksim.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=r"workers.retryable_errors: must name exception classes as module:Class"):
        tiny(workers={"retryable_errors": ["Throttled"]})
    with pytest.raises(ValueError, match=r"delay_s: must be 0 .. 86400"):
        RetryLater(delay_s=-1)
