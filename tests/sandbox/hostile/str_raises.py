"""An exception whose ``__str__`` raises."""


class Nasty(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")

    __repr__ = __str__


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    raise Nasty()
