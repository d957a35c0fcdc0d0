"""The bundled candidate designs, resolved by name (``--candidate NAME`` of ``run``, ``check``
and ``compare``) or by the reference of their own function.

A candidate (``acksim.model.candidates.CANDIDATES``) is a processor *and* the design options
it runs under: ``naive`` is only naive under autocommit with no unique keys. So every command
applies both: ``--candidate NAME`` sets the processor and merges the design options into the
scenario's tables (``acksim.search.design.merge_design``), and ``--processor`` naming a
candidate's own function (``acksim.model.candidates:naive``) applies that candidate's options
too, with a one-line note on stderr. ``acksim.model.processor:process`` is the processor of
several candidates and applies none.
"""

from __future__ import annotations

import sys

from acksim.report.outdir import UsageError

CANDIDATES_MODULE = "acksim.model.candidates"


def candidate_design(name: str) -> tuple[str, dict]:
    """(processor reference, design options section -> {key: value}) of the candidate
    ``name``. Raises ``UsageError`` (one line, the names listed) for an unknown name."""
    from acksim.model.candidates import CANDIDATES

    if name not in CANDIDATES:
        raise UsageError(f"--candidate: unknown {name!r}; one of {', '.join(CANDIDATES)}")
    candidate = CANDIDATES[name]
    ref = f"{candidate.processor.__module__}:{candidate.processor.__name__}"
    return ref, {k: dict(v) for k, v in candidate.design.items()}


def candidate_of_ref(ref: str | None) -> str | None:
    """The candidate whose own function ``ref`` names (``acksim.model.candidates:naive`` or
    the old ``model.candidates:naive``), else None. Imports nothing but the candidates."""
    if not ref:
        return None
    module, _, function = ref.rpartition(":")
    if module not in (CANDIDATES_MODULE, "model.candidates"):
        return None
    from acksim.model.candidates import CANDIDATES

    for name, candidate in CANDIDATES.items():
        fn = candidate.processor
        if fn.__module__ == CANDIDATES_MODULE and fn.__name__ == function:
            return name
    return None


def resolve(candidate: str | None, processor: str | None) -> tuple[str | None, dict]:
    """The processor reference (None: the scenario's) and design options a command runs
    with, from its ``--candidate`` and ``--processor``. Raises ``UsageError`` for an unknown
    candidate, or both flags naming different processors."""
    if candidate:
        ref, design = candidate_design(candidate)
        if processor and processor != ref and candidate_of_ref(processor) != candidate:
            raise UsageError(f"--processor: {processor!r} and --candidate {candidate} name two processors; give one")
        return ref, design
    name = candidate_of_ref(processor)
    if name is None:
        return processor, {}
    ref, design = candidate_design(name)
    if design:
        options = ", ".join(f"{s}.{k} = {v!r}" for s, table in design.items() for k, v in table.items())
        print(f"acksim: note: --processor {processor} is the candidate {name!r}: its design options are applied "
              f"({options}); --candidate {name} says so", file=sys.stderr)
    return ref, design
