"""Idle polls cost no events: the polling grid is computed, and the polls that find work land
on the instants repeated polling gives, bit for bit."""

import simpy

from acksim.world.ticks import delay_until, next_tick


def test_delay_until_lands_exactly_on_the_instant():
    for now, at in [(0.1, 0.3), (100.004, 105.0), (1e6 + 0.1, 1e6 + 0.7), (7.0, 7.0)]:
        assert now + delay_until(now, at) == at


def test_next_tick_is_the_grid_of_repeated_addition_strictly_after():
    grid, t = [], 0.0
    for _ in range(10):
        t += 0.1
        grid.append(t)
    assert next_tick(0.0, 0.1, 0.75) == grid[7] == 0.7999999999999999  # repeated addition, not 8 * 0.1
    assert next_tick(0.0, 0.1, grid[4]) == grid[5]  # a poll due at that very instant ran just before
    assert next_tick(2.0, 5.0, 105.0) == 107.0


def test_a_sleeping_actor_woken_later_resumes_on_its_polling_grid():
    env, polls = simpy.Environment(), []

    def poller():
        tick = 0.0
        yield env.timeout(0.0)
        wake = env.event()
        env.process(waker(wake))
        yield wake  # woken at 12.3: the grid of 5 s gives the next poll at 15
        yield env.timeout(delay_until(env.now, next_tick(tick, 5.0, env.now)))
        polls.append(env.now)

    def waker(event):
        yield env.timeout(12.3)
        event.succeed()

    env.process(poller())
    env.run()
    assert polls == [15.0]
