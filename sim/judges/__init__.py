"""The judges: pure functions over a run's history and final store state. ``invariants``
(verdicts with their first counterexample), ``slo`` (the SLO figures), ``series`` (time
series and attempt spans derived from the records), ``hazards`` (which hazard windows a run
hit), ``summary`` (the machine-readable summary.json and its verdict), ``fanout`` (the
invariants and summary of the shipment fan-out design) and ``figure_text`` (a figure's value
as every output prints it). They read ``acksim.outcome`` and ``acksim.history`` and never
import the world that made the run."""
