"""What every table of the scenario schema shares: the error it raises, the strict frozen
section model, the limits of virtual time and the validators of times, spans and windows.

Times are virtual seconds from the epoch; ``HORIZON_S`` (400 days) is the latest any
scenario may reach.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

DAY = 86_400.0
HORIZON_S = 400 * DAY  # the longest virtual time any scenario may reach
MAX_SCENARIO_BYTES = 1_000_000


class ScenarioError(ValueError):
    """A scenario that cannot be run; ``str()`` is one line naming the field and what is allowed."""


class _Section(BaseModel):
    # strict: TOML has native integers, floats, booleans and strings, so "60" or true where a
    # number is expected is a mistake to report, not to coerce (an int is still a valid float)
    # and inf or nan in a time or threshold is never meant
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def _tuples(value):
    """TOML arrays arrive as lists; the settings keep them as (nested) tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


Tupled = BeforeValidator(_tuples)
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(ge=0.0, le=HORIZON_S)]
Span = Annotated[tuple[Seconds, Seconds], Tupled]


def _ordered_windows(v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """Validate time windows ``[start_s, end_s]`` (start before end); returns them."""
    for lo, hi in v:
        if lo >= hi:
            raise ValueError(f"each window must be [start_s, end_s] with start_s < end_s; "
                             f"[{lo:g}, {hi:g}] is not")
    return v
