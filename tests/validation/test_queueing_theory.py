"""The world against queueing theory and a peer simulator.

Configured as an M/M/c queue (Poisson deadlines, exponential work, c workers, no faults):
Ciw, fed the very same inter-arrival and service samples, computes the same waits, job for
job, at utilisation 0.5, 0.8 and 0.9 (so the world is exactly a first-come-first-served
M/M/c); the utilisation is within 3 % of ρ; and the Erlang-C mean wait lies inside the run's
95 % batch-means confidence interval, as does the M/D/1 closed form. The runs here go in
parallel over the machine's cores, under a minute on 2.

The 3 % bound on the mean wait itself is a ``nightly`` test (``make test-nightly``): waits in
heavy traffic are so strongly correlated that at ρ = 0.9 a run of 100k jobs still has a
standard error of about 7 %, and a 3 % bound needs millions of jobs (4 million here, 16
independent replications, about 17 minutes on 2 cores).
"""

import math
from concurrent.futures import ProcessPoolExecutor

import pytest

from acksim.capacity.queueing import erlang_c, erlang_c_wait, md1_wait, measure, mmc_scenario
from acksim.world.core import World

ciw = pytest.importorskip("ciw")

C = 4
# (utilisation, jobs): heavier traffic needs longer runs for the same precision
CASES = ((0.5, 20_000), (0.8, 40_000), (0.9, 100_000))


def simulate(c: int, rate: float, jobs: int, service: str = "exponential"):
    world = World(mmc_scenario(c, rate, 1.0, jobs, seed=1, service=service))
    try:
        return measure(world.run().history, c)
    finally:
        world.close()


@pytest.fixture(scope="module")
def runs():
    with ProcessPoolExecutor() as pool:
        futures = {rho: pool.submit(simulate, C, rho * C, jobs) for rho, jobs in CASES}
        md1 = pool.submit(simulate, 1, 0.8, 40_000, "constant")
        return {rho: f.result() for rho, f in futures.items()}, md1.result()


def test_closed_forms_against_known_values():
    assert erlang_c(1, 0.5) == pytest.approx(0.5)            # M/M/1: P(wait) = ρ
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c_wait(1, 0.5, 1.0) == pytest.approx(1.0)   # ρ/(μ − λ)
    assert md1_wait(0.5, 1.0) == pytest.approx(0.5)           # half of M/M/1's
    with pytest.raises(ValueError, match="offered load must be in"):
        erlang_c(2, 2.0)


@pytest.mark.parametrize("rho", [rho for rho, _ in CASES])
def test_mmc_utilisation_is_within_3_percent_and_erlang_c_is_inside_the_wait_interval(runs, rho):
    measured = runs[0][rho]
    expected = erlang_c_wait(C, rho * C, 1.0)
    assert measured.utilisation == pytest.approx(rho, rel=0.03)
    assert abs(measured.mean_wait_s - expected) <= measured.wait_ci_half_s
    assert measured.wait_ci_half_s < 0.25 * expected  # and the interval says something


@pytest.mark.parametrize("rho", [rho for rho, _ in CASES])
def test_ciw_given_the_same_samples_computes_the_same_waits(runs, rho):
    measured = runs[0][rho]
    ciw.seed(0)
    network = ciw.create_network(
        arrival_distributions=[ciw.dists.Sequential(list(measured.interarrivals))],
        service_distributions=[ciw.dists.Sequential(list(measured.services_in_start_order))],
        number_of_servers=[C])
    sim = ciw.Simulation(network)
    sim.simulate_until_max_customers(len(measured.interarrivals), method="Finish", progress_bar=False)
    waits = [r.waiting_time for r in sim.get_all_records()]
    assert len(waits) == len(measured.interarrivals)
    assert sum(waits) / len(waits) == pytest.approx(measured.mean_wait_s, rel=1e-4)


def test_md1_wait_matches_its_closed_form(runs):
    measured = runs[1]
    assert abs(measured.mean_wait_s - md1_wait(0.8, 1.0)) <= measured.wait_ci_half_s
    assert max(abs(s - 1.0) for s in measured.services_in_start_order) < 1e-9  # constant service


# (replications, jobs each) per utilisation: sized for a standard error near 1 % of Wq
NIGHTLY = {0.5: (8, 100_000), 0.8: (8, 100_000), 0.9: (16, 250_000)}


def replicate(c: int, rate: float, jobs: int, seed: int) -> float:
    """Mean wait in queue of one independent replication (seed ``seed``)."""
    world = World(mmc_scenario(c, rate, 1.0, jobs, seed=seed))
    try:
        return measure(world.run().history, c).mean_wait_s
    finally:
        world.close()


@pytest.mark.nightly
@pytest.mark.parametrize("rho", sorted(NIGHTLY))
def test_mmc_mean_wait_is_within_3_percent_of_erlang_c(rho):
    from scipy import stats

    reps, jobs = NIGHTLY[rho]
    with ProcessPoolExecutor() as pool:
        means = list(pool.map(replicate, [C] * reps, [rho * C] * reps, [jobs] * reps,
                              range(101, 101 + reps)))
    expected = erlang_c_wait(C, rho * C, 1.0)
    mean = sum(means) / reps
    half = stats.t.ppf(0.975, reps - 1) * math.sqrt(sum((m - mean) ** 2 for m in means) / (reps - 1) / reps)
    print(f"rho={rho}: Wq={mean:.5f} s over {reps}x{jobs} jobs, Erlang-C {expected:.5f} s, "
          f"error {100 * (mean / expected - 1):+.2f} %, 95 % CI half-width {100 * half / expected:.2f} %")
    assert mean == pytest.approx(expected, rel=0.03)
