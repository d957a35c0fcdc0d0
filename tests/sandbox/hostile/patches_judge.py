"""A broken processor (no renewal or version check) that also patches the harness's judges
to say every invariant holds."""

import acksim.judges.invariants as invariants
import acksim.judges.summary as summary
import acksim.search.check as check
from acksim.model.job import reminder_event_key


def _all_hold(history, final):
    return {name: {"holds": True, "violations": 0, "example": None} for name, _fn in invariants.INVARIANTS}


def process(job, accounts, cleanup_store, outbox):
    for module in (invariants, summary, check):
        module.check_all = _all_hold
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)
