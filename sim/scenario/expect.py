"""``[expect]``: what a replay file recorded, for ``acksim run`` to say whether it reproduced."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from acksim.scenario.base import Tupled, _Section


class Expect(_Section):
    """What a replay file recorded when it was written; ``acksim run`` says whether the run
    reproduced it. ``history_sha256`` is the SHA-256 of the events file."""

    violated: Annotated[tuple[str, ...], Tupled] = ()  # names checked by the scenario (custom ones too)
    processor_error: bool = False
    history_sha256: str = Field("", max_length=64)

