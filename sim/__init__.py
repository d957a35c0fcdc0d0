"""acksim's harness: the simulated world around the code under test in ``model``.

Actors are SimPy processes named after what they model (``scheduler``, ``worker``,
``renewals``, ``outbox_relay``, ``fault_injector``); every observable step appends one frozen
``Record`` to the world's append-only history; invariants and SLO figures are pure functions
over that history.
"""
