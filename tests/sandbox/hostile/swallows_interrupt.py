"""A spin that swallows the watchdog's ``KeyboardInterrupt``."""


def process(job, accounts, cleanup_store, outbox):
    accounts.get(job.account_id)
    while True:
        try:
            while True:
                pass
        except KeyboardInterrupt:
            continue
