"""A search that depends on its seed, not on what else happens to be imported.

Hypothesis (recent releases; 6.170 here) draws about one value in twenty from a pool of constants: its own
global pool (0, 1, -1, boundaries, ...) and the literals found in the source of every *local*
module loaded so far in the process, that is every module that is neither the standard library
nor an installed package: acksim itself in an editable install, the user's processor, the
modules of a test suite, a processor file a test wrote. Which of those are loaded differs
between ``acksim check``, a ``check --jobs`` pool worker, a pytest worker (which tests ran
there before), and from one acksim version to the next, so the same seed gave different
searches. While an acksim search runs, ``pinned_constants`` leaves the local pool empty: the
examples a seed gives depend on the seed, the base scenario and the strategy only. The global
pool stays as it is.

This reaches into Hypothesis's internals (``hypothesis.internal.conjecture.providers``:
``_get_local_constants`` and ``CONSTANTS_CACHE``); on a Hypothesis without them there is no
local pool to pin and nothing is done.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def pinned_constants() -> Iterator[None]:
    """Within the block, Hypothesis's pool of local constants is empty (its cache of the
    constants each choice may take is emptied on the way in and out, so nothing computed
    from another pool is used); the previous behaviour is restored on the way out, whatever
    the block raises. Not thread-safe: a search runs in one thread at a time."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants

        saved, cache = providers._get_local_constants, providers.CONSTANTS_CACHE.cache
    except (ImportError, AttributeError):  # no local constants in this Hypothesis
        yield
        return
    empty = Constants()
    cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = saved
        cache.clear()
