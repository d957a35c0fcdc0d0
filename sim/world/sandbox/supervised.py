"""One world run in a supervised child process (``acksim.world.sandbox.contain``): the way ``acksim
run``, ``compare``, sweeps and ``acksim.simulate`` run the code under test.

The child builds the ``World`` (so the processor is imported there, never in the judging
process; the caller names the world's class), runs it to the end (a hung processor the
in-process watchdog stopped ends the run, judged on what happened), and sends back a
``WorldRun``: the history and final state, the processor's own errors, an ``ImportError`` it
raised, and the threads it left running. When the child dies or is killed instead, the run
is the finding: an empty history, a final state ``stopped_early`` with ``contained`` naming
the finding (``processor_killed_worker`` or ``processor_hung``), and the text as the
processor's error. The child makes its temporary files (SQLite stores, the fan-out's
records) inside a folder the parent made and removes, so a killed child leaves no folder
behind.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from acksim.history import pack, unpack
from acksim.outcome import FinalState, Outcome, pack_final, unpack_final
from acksim.scenario import Scenario
from acksim.collector import young_collections
from acksim.world.sandbox.contain import Child, Died


@dataclass(frozen=True)
class WorldRun:
    """A finished run seen from the parent: ``outcome`` (history and final state),
    ``processor_errors`` ((virtual s, worker, message id, traceback text), as
    ``World.processor_errors``), ``import_error`` (one line, or None), ``threads`` (names of
    non-daemon threads the processor left running; they were stopped with the child) and
    ``contained``: "" when the child answered, else the finding its death or kill is."""

    outcome: Outcome
    processor_errors: tuple[tuple[float, str, int | None, str], ...] = ()
    import_error: str | None = None
    threads: tuple[str, ...] = ()
    contained: str = ""


def run_world(scenario: Scenario, processor: Callable | str | None = None, *, world: Callable[..., Any],
              progress: Callable[[float], None] | None = None,
              planned_end: Callable[[float], None] | None = None) -> WorldRun:
    """Run ``scenario`` with ``processor`` (a reference, a callable, or None: the scenario's)
    in a fresh supervised child, in the world the child builds as ``world(scenario,
    processor)``: ``acksim.world.core.World``, or ``acksim.world.fanout.FanoutWorld`` (the
    shipment design; the caller names the class, this module imports neither). With a
    ``World``, ``progress`` receives the virtual time now and then, ``planned_end`` the last
    planned event's time first (for a progress bar). Raises what the world raises
    (``ScenarioError`` for a processor reference that does not load, an impossible store
    configuration) and ``KeyboardInterrupt``; never what the processor does."""
    with tempfile.TemporaryDirectory(prefix="acksim-") as tmp:
        target = _target(world, processor, tmp, progress is not None or planned_end is not None)

        def relay(message):
            kind, value = message
            callback = planned_end if kind == "planned_end" else progress
            if callback is not None:
                callback(value)

        # the child is made inside, so it runs, packs and pickles its history that way too
        with young_collections():
            try:
                with Child(target, keep=False) as child:
                    reply = child.call(scenario, relay)
            except Died as death:
                return killed_run(death.finding, death.text)
            (rows, final), errors, import_error = reply.value
            return WorldRun(Outcome(unpack(rows), unpack_final(final)), errors, import_error, threads=reply.threads)


def killed_run(finding: str, text: str) -> WorldRun:
    """The run of a child that died or was killed: nothing of its history (a cut history
    would depend on wall-clock timing), stopped early, ``finding`` and ``text`` recorded."""
    final = FinalState((), (), (), (), (), 0.0, True, text, contained=finding)
    return WorldRun(Outcome((), final), ((0.0, "worker", None, text),), contained=finding)


def _target(world_class: Callable[..., Any], processor, tmp: str, report_progress: bool):
    def target(scenario: Scenario, emit):
        from acksim.world.sandbox.interleave import ProcessorHung

        tempfile.tempdir = tmp  # the parent removes it, whatever becomes of this process

        world = world_class(scenario, processor)
        if report_progress:
            emit(("planned_end", world._planned_end()))
            world.progress = lambda now: emit(("now", now))
        try:
            outcome = world.run()
        except ProcessorHung:
            outcome = world.outcome()
        finally:
            world.close()
        return ((pack(outcome.history), pack_final(outcome.final)), tuple(getattr(world, "processor_errors", ())),
                getattr(world, "import_error", None))

    return target


def check_loads(ref: str, field: str = "processor", params: tuple[str, ...] | None = None,
                path: str | None = None) -> None:
    """Check the input: load the processor reference ``ref`` in a supervised child (its
    import is the code under test's, never run here). Raises ``ScenarioError`` naming
    ``field`` as ``load_processor`` does (``params``, ``path`` likewise). An import that ends
    or hangs its process raises nothing: the run itself reports that as its finding."""

    def target(_args, _emit):
        from acksim.world.sandbox.processor_ref import CLEANUP_PARAMS, load_processor

        load_processor(ref, field, params or CLEANUP_PARAMS, path)

    try:
        with Child(target, keep=False) as child:
            child.call(None)
    except Died:
        pass
