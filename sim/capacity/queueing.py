"""Queueing theory to validate the world against: closed forms, and the world as an M/M/c.

With Poisson deadlines, exponential (or constant) service time, zero store, publish and ack
latency, no faults and no lifecycle, the workers are the c servers of an M/M/c (M/D/c) queue
with first-come-first-served order. ``mmc_scenario`` builds that world; ``measure`` reads the
mean wait in queue (from a message's becoming visible to its delivery) and the utilisation
from its history; ``erlang_c_wait`` and ``md1_wait`` are the textbook values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from acksim.capacity.intervals import t_quantile
from acksim.history import Record
from acksim.scenario import Scenario, parse


def erlang_c(c: int, offered_load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with offered load a = λ/μ < c."""
    a = offered_load
    if not 0 < a < c:
        raise ValueError(f"offered load must be in (0, c={c}), got {a}")
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def erlang_c_wait(c: int, arrival_rate: float, service_rate: float) -> float:
    """Mean wait in queue Wq of M/M/c, in the time unit of the rates: C(c, a) / (cμ − λ)."""
    return erlang_c(c, arrival_rate / service_rate) / (c * service_rate - arrival_rate)


def md1_wait(arrival_rate: float, service_time: float) -> float:
    """Mean wait in queue of M/D/1 (Pollaczek–Khinchine): ρ·D / (2(1 − ρ)), ρ = λ·D < 1."""
    rho = arrival_rate * service_time
    if not 0 < rho < 1:
        raise ValueError(f"utilisation must be in (0, 1), got {rho}")
    return rho * service_time / (2 * (1 - rho))


def mmc_scenario(c: int, arrival_rate: float, service_mean_s: float, jobs: int, seed: int = 1,
                 service: str = "exponential") -> Scenario:
    """The world as an M/M/c (``service`` "exponential") or M/D/c ("constant") queue:
    ``jobs`` Poisson deadlines at ``arrival_rate`` per second, ``c`` workers, no faults."""
    return parse({
        "name": f"m{'m' if service == 'exponential' else 'd'}{c}", "seed": seed,
        "workload": {"accounts": jobs, "arrivals": "poisson", "arrival_rate_per_s": arrival_rate,
                     "deadline_start_s": 0.0, "renew_fraction": 0.0, "extension_fraction": 0.0,
                     "resubscribe_fraction": 0.0, "delete_fraction": 0.0},
        "scheduler": {"publish_latency_s": 0.0},
        "queue": {"visibility_timeout_s": 43_200.0, "ack_latency_s": 0.0, "max_receive_count": 0},
        "workers": {"count": c, "service_time_mean_s": service_mean_s, "service_time_distribution": service},
        "stores": {"backend": "memory", "latency_mean_s": 0.0},
        "mail": {"poll_interval_s": 3600.0},
        "run": {"max_records": 100_000_000, "idle_check_s": 60.0},
    }, "mmc")


@dataclass(frozen=True)
class QueueMeasures:
    """Measured from one run: mean wait in queue (s) with the half-width of its 95 %
    batch-means confidence interval (20 batches in arrival order: waits in heavy traffic are
    strongly correlated, so the plain standard error would be far too small), utilisation of
    the c servers, and the per-job samples (inter-arrival gaps; service times in start order)."""

    mean_wait_s: float
    wait_ci_half_s: float
    utilisation: float
    interarrivals: tuple[float, ...]
    services_in_start_order: tuple[float, ...]


def measure(history: Sequence[Record], c: int) -> QueueMeasures:
    """Wait in queue per message (visible → first delivery), utilisation = busy time /
    (c × time to the last ack); service time = delivery to the start of its unit of work."""
    visible = {r.message_id: r.visible_at for r in history if r.kind == "published"}
    delivered: dict[int, float] = {}
    services: list[tuple[float, float]] = []
    busy = last_ack = 0.0
    for r in history:
        if r.kind == "delivered" and r.message_id not in delivered:
            delivered[r.message_id] = r.time
        elif r.kind == "attempt_started" and r.detail == "0":
            services.append((delivered[r.message_id], r.time - delivered[r.message_id]))
        elif r.kind == "acked":
            busy += r.time - delivered[r.message_id]
            last_ack = max(last_ack, r.time)
    waits = [delivered[m] - visible[m] for m in sorted(delivered, key=visible.__getitem__)]
    arrivals = sorted(visible.values())
    gaps = [b - a for a, b in zip([0.0, *arrivals[:-1]], arrivals)]
    return QueueMeasures(sum(waits) / len(waits), batch_means_half_width(waits), busy / (c * last_ack),
                         tuple(gaps), tuple(s for _t, s in sorted(services)))


def batch_means_half_width(samples: Sequence[float], batches: int = 20) -> float:
    """Half-width of the 95 % confidence interval of the mean of correlated ``samples`` by
    the method of batch means (Student t with ``batches - 1`` degrees of freedom). Raises
    ValueError for fewer samples than ``batches``, or fewer than 2 batches."""
    if batches < 2:
        raise ValueError(f"batches: need at least 2 batches, got {batches}")
    size = len(samples) // batches
    if size == 0:
        raise ValueError(f"need at least {batches} samples, got {len(samples)}")
    means = [sum(samples[i * size:(i + 1) * size]) / size for i in range(batches)]
    mean = sum(means) / batches
    var = sum((m - mean) ** 2 for m in means) / (batches - 1)
    return t_quantile(0.975, batches - 1) * math.sqrt(var / batches)
