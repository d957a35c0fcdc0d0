"""``[plan]``: an explicit workload of accounts and lifecycle steps (replay files use it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from acksim.scenario.base import HORIZON_S, Tupled, _Section

AccountId = Annotated[str, Field(min_length=1, max_length=100)]


class PlannedAccount(_Section):
    """An account of an explicit plan, created at time 0 with its first deadline."""

    account_id: AccountId
    deadline_s: float = Field(ge=0.0, le=HORIZON_S)


class PlannedStep(_Section):
    """A lifecycle step of an explicit plan (see ``acksim.world.actors.renewals``): ``amount_s`` is the
    extension of an "extend"."""

    at_s: float = Field(ge=0.0, le=HORIZON_S)
    kind: Literal["renew", "extend", "resubscribe", "delete"]
    account_id: AccountId
    amount_s: float = Field(0.0, ge=0.0, le=HORIZON_S)


class Plan(_Section):
    """An explicit workload (what ``acksim check`` writes into a replay file): when
    ``accounts`` is not empty it replaces the workload drawn from ``[workload]``."""

    accounts: Annotated[tuple[PlannedAccount, ...], Tupled] = ()
    steps: Annotated[tuple[PlannedStep, ...], Tupled] = ()

    @model_validator(mode="after")
    def _steps_name_known_accounts(self) -> "Plan":
        known = {a.account_id for a in self.accounts}
        if len(known) != len(self.accounts):
            raise ValueError("accounts: each account_id may appear once")
        for step in self.steps:
            if step.account_id not in known:
                raise ValueError(f"steps: account_id {step.account_id!r} is not in plan.accounts")
        return self
