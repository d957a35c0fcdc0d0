"""What each live broker needs on this machine (server binaries, Python clients), and ``need``:
a live test skips, or with ``ACKSIM_REQUIRE_LIVE=1`` fails, naming what to install."""

from __future__ import annotations

import os
import shutil

import pytest

NEEDS = {"redis": (["redis-server"], ["redis"]), "rabbitmq": (["rabbitmq-server", "epmd"], ["pika"]),
         "sqs": ([], ["moto", "flask", "boto3"])}
INSTALL = {"redis": "apt-get install redis-server && pip install 'acksim[live]'",
           "rabbitmq": "apt-get install rabbitmq-server && pip install 'acksim[live]'",
           "sqs": "pip install 'acksim[live]'"}


def _missing(broker: str) -> list[str]:
    import importlib.util

    bins, mods = NEEDS[broker]
    out = [b for b in bins if not (shutil.which(b) or os.access(f"/usr/sbin/{b}", os.X_OK))]
    return out + [m for m in mods if importlib.util.find_spec(m) is None]


def need(broker: str) -> None:
    """Skip (or, with ACKSIM_REQUIRE_LIVE=1, fail) when ``broker`` cannot run here."""
    missing = _missing(broker)
    if missing:
        msg = f"{broker} live test did not run: missing {', '.join(missing)}; install: {INSTALL[broker]}"
        if os.environ.get("ACKSIM_REQUIRE_LIVE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
