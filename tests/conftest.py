"""Shared fixtures and the Hypothesis settings profiles ("ci" small, "nightly" large).

Select a profile with ``HYPOTHESIS_PROFILE=nightly``; the default is "ci".
"""

import os

import pytest

pytest_plugins = ["pytester"]
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def tiny():
    """Factory: ``tiny(**sections)`` -> a validated one-account Scenario (see ``tiny_dict``)."""
    from acksim.scenario import parse
    from helpers.tinyworld import tiny_dict

    return lambda **sections: parse(tiny_dict(**sections))


def pytest_configure(config):
    config.addinivalue_line("markers", "nightly: long runs, collected only with HYPOTHESIS_PROFILE=nightly "
                            "(make test-nightly)")


def pytest_collection_modifyitems(config, items):
    """Leave ``nightly`` tests out of the ci profile (they are deselected, and say so)."""
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "nightly":
        return
    nightly = [item for item in items if item.get_closest_marker("nightly")]
    if nightly:
        config.hook.pytest_deselected(items=nightly)
        items[:] = [item for item in items if not item.get_closest_marker("nightly")]


@pytest.fixture(scope="session")
def postgres_server():
    """The private PostgreSQL cluster, held for the whole session (one per test process) and
    stopped at its end; yields its connection string. Skips (or fails, when required) where
    PostgreSQL cannot run (``helpers.postgres.need_postgres``)."""
    from helpers.postgres import need_postgres

    need_postgres()
    from acksim.postgres_server import held_server

    with held_server() as conninfo:
        yield conninfo
