"""``python -m acksim``: the command line, as the ``acksim`` console script."""

from acksim.cli.main import entry

entry()
