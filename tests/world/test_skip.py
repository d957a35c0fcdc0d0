"""A lone timeout skipped in place (acksim.world.skip): same times, same order, same budget."""

import simpy

from acksim.world import skip
from acksim.world.budget import run_guarded


def _trace(env, with_advance: bool):
    """Two processes waiting odd delays, one of them tying with the other at t=3.0."""
    seen = []

    def wait(delay):
        if with_advance and skip.advance(env, delay):
            return
        yield env.timeout(delay)

    def a():
        for delay in (1.0, 0.5, 1.5, 0.25, 2.0):
            yield from wait(delay)
            seen.append(("a", env.now))

    def b():
        for delay in (3.0, 0.1, 0.1):
            yield from wait(delay)
            seen.append(("b", env.now))

    env.process(a())
    env.process(b())
    return seen


def test_advance_gives_the_same_times_and_order_as_timeouts():
    plain = simpy.Environment()
    expected = _trace(plain, with_advance=False)
    plain.run()
    env = skip.Environment()
    seen = _trace(env, with_advance=True)
    assert run_guarded(env, env.event(), max_events=10_000, max_wall_s=60.0) is None
    assert seen == expected
    assert [who for who, _ in seen] == ["a", "a", "b", "a", "b", "b", "a", "a"]  # b first at the 3.0 tie
    assert env.skipped > 0
    assert env.now == plain.now


def test_no_skip_outside_the_budget_loop_nor_on_a_tie():
    env = skip.Environment()
    env.sole = True
    assert skip.advance(env, 1.0) is False  # allowance 0: outside run_guarded
    env.allowance = 1
    env.timeout(1.0)
    assert skip.advance(env, 1.0) is False  # a tie goes through the heap
    assert skip.advance(env, 0.5) is True
    assert env.now == 0.5 and env.allowance == 0 and env.skipped == 1
    assert skip.advance(simpy.Environment(), 0.1) is False


def test_max_events_stops_after_the_same_events_with_skips():
    def ticker(env, n, with_advance):
        for _ in range(n):
            if not (with_advance and skip.advance(env, 1.0)):
                yield env.timeout(1.0)

    plain = simpy.Environment()
    plain.process(ticker(plain, 50_000, False))
    reason_plain = run_guarded(plain, plain.event(), max_events=20_000, max_wall_s=60.0)
    env = skip.Environment()
    env.process(ticker(env, 50_000, True))
    reason = run_guarded(env, env.event(), max_events=20_000, max_wall_s=60.0)
    assert env.skipped > 0
    assert reason == reason_plain
    assert env.now == plain.now


def test_stop_after_stops_only_when_it_says_so():
    from acksim.world.sandbox.interleave import Attempt, Finished, StoreCall

    class Store:
        def get(self, key):
            return key

    def processor(job, store):
        return [store.get(i) for i in range(4)]

    asked = []
    attempt = Attempt(processor, None, {"store": Store()})
    attempt.stop_after = lambda index: asked.append(index) or index == 2
    steps = []
    step = attempt.step()
    while not isinstance(step, Finished):
        steps.append((step.index, step.when))
        step = attempt.step()
    assert asked == [0, 1, 2, 3]
    assert steps == [(0, "before"), (1, "before"), (2, "before"), (2, "after"), (3, "before")]
    assert step.value == [0, 1, 2, 3] and isinstance(StoreCall("s", "get", 0, "after"), StoreCall)
