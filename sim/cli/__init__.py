"""The command line: ``acksim run``, ``check``, ``sweep``, ``compare`` and ``presets``
(``main.py`` parses and dispatches; one module per command)."""
