"""The reference's work, with the outbox event key handed over as an object of its own whose
unpickling would run a command (``__reduce__``): the judging parent must not run it."""

import os

from acksim.model.processor import process as reference


class Key(str):
    def __reduce__(self):
        return (os.system, (f"touch {os.environ.get('ACKSIM_TEST_MARK', '/dev/null')}",))


def process(job, accounts, cleanup_store, outbox):
    add_once = outbox.add_once
    outbox.add_once = lambda *args, **kwargs: add_once(*(Key(a) if isinstance(a, str) else a for a in args),
                                                      **{k: Key(v) if isinstance(v, str) else v
                                                         for k, v in kwargs.items()})
    return reference(job, accounts, cleanup_store, outbox)
