"""The judges: pure functions over a run's history and final store state. ``invariants``
(verdicts with their first counterexample), ``slo`` (the SLO figures), ``series`` (time
series and attempt spans derived from the records), ``hazards`` (which hazard windows a run
hit), ``summary`` (the machine-readable summary.json) and ``fanout`` (the invariants and
summary of the shipment fan-out design)."""
