"""``[expect]``: what a replay file recorded, for ``acksim run`` to say whether it reproduced."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from acksim.invariant_names import INVARIANT_NAMES
from acksim.scenario.base import Tupled, _Section


class Expect(_Section):
    """What a replay file recorded when it was written; ``acksim run`` says whether the run
    reproduced it. ``history_sha256`` is the SHA-256 of the events file."""

    violated: Annotated[tuple[str, ...], Tupled] = ()
    processor_error: bool = False
    history_sha256: str = Field("", max_length=64)

    @field_validator("violated")
    @classmethod
    def _known_invariants(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        allowed = INVARIANT_NAMES
        unknown = [name for name in v if name not in allowed]
        if unknown:
            raise ValueError(f"no invariant {unknown[0]!r}; allowed: {', '.join(allowed)}")
        return v

