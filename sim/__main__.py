"""``python -m acksim``: the command line, as the ``acksim`` console script."""

import sys

from acksim.cli.main import main

sys.exit(main())
