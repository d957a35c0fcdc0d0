"""The simulated world and its actors, each a SimPy process named after what it models:
``scheduler``, ``queue``, ``worker``, ``renewals``, ``outbox_relay``, ``faults`` (the fault
injector); ``interleave`` runs the code under test in a greenlet so that virtual time passes
at every store call; ``core`` builds one world from a scenario and runs it; ``fanout`` is the
shipment fan-out design's world."""
