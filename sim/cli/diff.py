"""The ``acksim diff BASE NEW`` command: a run's summary against a baseline's.

BASE and NEW are ``summary.json`` files or report folders. It prints what changed per
invariant and per SLO figure (``acksim.report.baseline``) and exits 0 when no invariant broke
and no figure got worse than its tolerance, 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import json

from acksim.report.baseline import BaselineError, compare, diff_lines, parse_tolerances, read_summary
from acksim.report.outdir import UsageError


def add_diff_parser(sub) -> None:
    """Add the ``diff`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("diff", help="compare a run's summary.json with a baseline's; exit 1 on a regression")
    p.add_argument("base", help="the baseline: a summary.json or a report folder")
    p.add_argument("new", help="the run to judge: a summary.json or a report folder")
    p.add_argument("--tolerance", action="append", default=[], metavar="[NAME=]PERCENT",
                   help="how much worse a figure may get: 10%% for every figure (the default), or "
                        "NAME=PERCENT for the figures whose name contains NAME (p99=5%%); repeatable")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")


def cmd_diff(args) -> int:
    """Run ``acksim diff``; returns the exit code."""
    try:
        default, named = parse_tolerances(args.tolerance)
        result = compare(read_summary(args.base), read_summary(args.new), default, named)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        for line in diff_lines(result):
            print(line)
    return 0 if result["verdict"] == "PASS" else 1
