"""The simulated world, one SimPy environment in virtual seconds. Its parts, one folder each:
``actors`` (the scheduler, the workers, the players' renewals, the outbox relay: SimPy processes
named after what they model), ``queue`` (the at-least-once queue and its mechanisms) and
``sandbox`` (the code under test's process images, virtual clock and greenlet interleaving).
Beside them: ``attempt`` (the worker's attempt, written once and driven by the simulation and
the live mode alike), the faults (``faults``, ``links``, ``pauses``, ``partitions``), ``core``
(builds one world from a scenario and runs it), ``fanout`` (the shipment fan-out design's
world) and the run's guards (``budget``, ``cost``, ``skip``, ``ticks``)."""
