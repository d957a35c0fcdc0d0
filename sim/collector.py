"""The cyclic garbage collector while a long run makes or reads its history.

A full collection scans every object alive, and a long run keeps millions of records and
much world state alive: with the default thresholds, building, sending and judging a history
pays more the longer it is. ``young_collections`` lets only the young generations collect
for a while: around a run, a supervised child's answer and the judges.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

# the cyclic collector while a world runs (``young_collections``): gen-0 threshold, gen-0
# collections per gen-1 one, and gen-1 collections per full one (never within a run)
RUN_GC_THRESHOLDS = (10_000, 20, 1_000_000_000)


@contextmanager
def young_collections() -> Iterator[None]:
    """Only the cyclic collector's young generations collect in the block
    (``RUN_GC_THRESHOLDS``); its thresholds are as they were after. A full collection scans
    every object alive, the whole history and world state of a long run, so with the default
    thresholds whatever makes millions of records pays more the longer the history is: a run
    (``World.run``; about a tenth of a 100k-account day's time), and outside it a supervised
    child's answer pickled, sent, read and rebuilt (``acksim.world.sandbox.supervised``) and the
    judges (``acksim.judges.summary.build_summary``). Cycles that become garbage young (a
    crashed attempt's frames) are still collected in the block, older ones by the first full
    collection after it. Blocks may nest and overlap across threads (runs on a Dask worker's
    threads): the thresholds are set when the first block starts and put back when the last
    one ends."""
    global _young_blocks, _saved_thresholds
    with _young_lock:
        if _young_blocks == 0:
            _saved_thresholds = gc.get_threshold()
            gc.set_threshold(*RUN_GC_THRESHOLDS)
        _young_blocks += 1
    try:
        yield
    finally:
        with _young_lock:
            _young_blocks -= 1
            if _young_blocks == 0:
                gc.set_threshold(*_saved_thresholds)


_young_lock = threading.Lock()
_young_blocks = 0  # ``young_collections`` blocks under way in this process
_saved_thresholds: tuple[int, ...] = ()  # the thresholds before the first of them
