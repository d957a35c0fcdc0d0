"""Helpers shared by test modules: tiny scenarios, a queue on its own, the live brokers' needs.

A test module imports what it shares from here (or takes a fixture from a ``conftest.py``),
never from another test module. The folder is importable as ``helpers`` because pytest puts
``tests/`` on ``sys.path`` (``tests/`` holds ``conftest.py`` and no ``__init__.py``)."""
