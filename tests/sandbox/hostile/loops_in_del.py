"""An object whose ``__del__`` loops, collected when the attempt's frame goes away."""


class Sticky:
    """Loops for ever when collected, swallowing whatever interrupts it."""

    def __del__(self):
        while True:
            try:
                while True:
                    pass
            except BaseException:  # noqa: BLE001 - the point of this processor
                continue


def process(job, accounts, cleanup_store, outbox):
    keep = Sticky()
    keep.self = keep  # a cycle: collected by the garbage collector, wherever it runs
    accounts.get(job.account_id)


def process_in_step(job, accounts, cleanup_store, outbox):
    """The same object without the cycle: collected as the call returns, inside its step."""
    Sticky()
    accounts.get(job.account_id)
