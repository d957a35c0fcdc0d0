"""The ``acksim check`` command: its arguments, the search, and what it prints.

The search and its findings are ``acksim.search``'s (``parallel``, ``design``,
``candidates``, ``findings``, ``replay``); this module parses the arguments, calls them,
prints and returns the exit code.

Exit codes: 0 nothing found (and, with ``--require-coverage``, every hazard window hit); 1 a
finding (an invariant violated, an error of the processor's own, a hung processor), a flaky
finding (one whose replay file did not give the same findings and history in a fresh process:
``acksim.search.selfcheck``; every finding is replayed so before it is reported) or an
uncovered hazard window under ``--require-coverage``; 2 bad input (a processor reference that
does not load, a bad scenario or option).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

from acksim.judges.hazards import HAZARDS
from acksim.report.junit import check_junit_path, write_junit
from acksim.report.outdir import UsageError, check_out_dir
from acksim.scenario import load, with_overrides
from acksim.search.candidates import resolve
from acksim.search.check import base_scenario
from acksim.search.design import DESIGN_OPTIONS, describe, design_of
from acksim.search.findings import (check_json, check_verdict, junit_suite, render_findings, render_flaky,
                                     search_lines, verdict_lines)
from acksim.search.replay import confirm_findings, save_findings
from acksim.world.sandbox.processor_ref import canonical_ref, processor_folder
from acksim.world.sandbox.supervised import check_loads


def add_check_parser(sub) -> None:
    """Add the ``check`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("check", help="search fault schedules for an invariant violation of a design")
    p.add_argument("scenario", nargs="?", help="base scenario whose queue, workers, stores and mail settings "
                                               "the examples start from (default: a small built-in one)")
    p.add_argument("--processor", metavar="REF", help="package.module:function or path/to/file.py:function "
                                                      "(default: the reference acksim.model.processor:process)")
    p.add_argument("--candidate", metavar="NAME", help="a bundled candidate design (processor and design "
                                                       "options) from acksim.model.candidates; see docs/check.md")
    p.add_argument("--max-examples", type=int, default=500, help="examples to try, 1 .. 1,000,000 (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    p.add_argument("--invariant", action="append", default=[], metavar="REF",
                   help="an invariant of your own, package.module:function or path/to/file.py:function, "
                        "searched for and shrunk like the built-in five (repeatable)")
    p.add_argument("--exhaustive", action="store_true",
                   help="run every schedule of a small scope instead of a random search: one account, a lifecycle "
                        "step between any two store calls, a crash at every phase, a concurrent copy at every "
                        "offset (see docs)")
    p.add_argument("--max-faults", type=int, default=3, metavar="N",
                   help="with --exhaustive: at most N faults a schedule, 1 .. 3 (default 3)")
    p.add_argument("--all-findings", action="store_true",
                   help="search on after the first finding until a round finds no new kind (default: stop at "
                        "the first finding, shrink and confirm it)")
    p.add_argument("--max-time", metavar="DURATION",
                   help="bound the whole check in wall-clock time, e.g. 30s, 5m, 1h (1 s .. 24 h): the search "
                        "stops early and says what it covered")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where the searches run: local processes (default) or a Dask cluster (needs acksim[dask])")
    p.add_argument("--address", "--scheduler", dest="address", metavar="ADDRESS",
                   help="the Dask scheduler's address, e.g. tcp://10.0.0.5:8786 (with --executor dask)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="independent searches on N processes, the examples split between them, one "
                        "example database (default: every processor this process may use; 1 .. 256)")
    for option in DESIGN_OPTIONS:
        p.add_argument(option.flag, choices=option.choices, help="design option (default: the base scenario's)")
    p.add_argument("--out", default="reports/check", help="folder for replay files (default reports/check)")
    p.add_argument("--save-corpus", metavar="DIR", help="also save each counterexample's replay file here")
    p.add_argument("--require-coverage", action="store_true",
                   help="fail (exit 1) when a hazard window was never hit")
    p.add_argument("--database", default=".hypothesis/acksim",
                   help="Hypothesis example database folder; earlier counterexamples are tried first")
    p.add_argument("--no-database", action="store_true", help="use no example database")
    p.add_argument("--junit-xml", metavar="FILE", help="also write the result as JUnit XML: a test case per "
                                                       "invariant and finding kind, and per hazard window")
    p.add_argument("--json", action="store_true",
                   help="print the check's result as JSON to stdout (everything else goes to stderr)")


# of a --max-time budget, what is kept for confirming a finding in a fresh process (wall s)
CONFIRM_RESERVE_S = 5.0
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """``--max-time``'s argument in wall seconds: a number with an optional unit (``ms``,
    ``s``, ``m``/``min``, ``h``; none: seconds), 1 s .. 24 h. Raises ``UsageError``
    (exit 2) otherwise."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|min|m|h)?\s*", text)
    seconds = float(m.group(1)) * _UNITS[m.group(2) or "s"] if m else None
    if seconds is None or not 1.0 <= seconds <= 86_400.0:
        raise UsageError(f"--max-time: must be a duration of 1 s .. 24 h such as 30s, 5m or 1h, got {text!r}")
    return seconds


def search_budget_s(max_time_s: float | None) -> float | None:
    """Of a whole check's wall-clock budget (seconds, or None), the search's share: the rest
    (at most ``CONFIRM_RESERVE_S``, a fifth of short budgets) is kept for confirming findings."""
    return None if max_time_s is None else max_time_s - min(CONFIRM_RESERVE_S, 0.2 * max_time_s)


def cmd_check(args) -> int:
    """Run ``acksim check``; returns the exit code."""
    if not 1 <= args.max_examples <= 1_000_000:
        raise UsageError(f"--max-examples: must be 1 .. 1000000, got {args.max_examples}")
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed: must be 0 .. 2**63-1, got {args.seed}")
    max_time_s = None if args.max_time is None else parse_duration(args.max_time)
    from acksim.search.parallel import default_jobs, run_checks

    dask = args.executor == "dask"
    jobs = (None if dask else default_jobs()) if args.jobs is None else args.jobs
    if jobs is not None and not 1 <= jobs <= (100_000 if dask else 256):
        raise UsageError(f"--jobs: must be 1 .. {100_000 if dask else 256}, got {jobs}")
    if dask:
        from acksim.cli.sweep import require_extra

        require_extra("--executor dask")
        if not args.address:
            raise UsageError("--address: the dask executor needs a scheduler address, e.g. tcp://host:8786")
    ref, design = resolve(args.candidate, args.processor)  # design flags below override the candidate's
    design = design_of({option.key: option.value(getattr(args, option.key)) for option in DESIGN_OPTIONS
                        if getattr(args, option.key) is not None}, over=design)
    base = with_overrides(base_scenario(load(args.scenario) if args.scenario else None, design),
                          invariants=args.invariant)
    ref = ref or base.processor
    check_loads(ref, "--processor", path=base.processor_path)  # bad input: exit 2 (loaded in a child)
    folder = base.processor_path or processor_folder(ref)
    ref = canonical_ref(ref)  # a replay file must load it from anywhere
    out = Path(args.out)
    check_out_dir(out, replaces=False)  # replay files are added to the folder
    if args.junit_xml:
        if Path(args.junit_xml).resolve() == out.resolve():  # the folder of replay files itself
            raise UsageError(f"--junit-xml: {args.junit_xml!r} is the --out folder; name a file")
        check_junit_path(args.junit_xml)
    if args.save_corpus:
        check_out_dir(Path(args.save_corpus), replaces=False, flag="--save-corpus")

    search = {"max_examples": args.max_examples, "seed": args.seed, "key": f"{ref}|{describe(base)}",
              "database": None if args.no_database else Path(args.database), "all_findings": args.all_findings,
              "max_time_s": search_budget_s(max_time_s)}
    if args.exhaustive:
        from acksim.search.exhaustive import Scope, run_exhaustive

        if not 1 <= args.max_faults <= 3:
            raise UsageError(f"--max-faults: must be 1 .. 3, got {args.max_faults}")
        progress, close = _progress_bar(1)
        try:
            report, scope_text, total = run_exhaustive(ref, base, Scope(max_faults=args.max_faults),
                                                       all_findings=args.all_findings,
                                                       max_time_s=search["max_time_s"], progress=progress)
        finally:
            close()
        jobs = 1
    elif dask:
        from acksim.search.parallel import run_checks_on_dask

        report = run_checks_on_dask(ref, base, address=args.address, jobs=jobs, **search)
    else:
        progress, close = _progress_bar(args.max_examples)
        try:
            report = run_checks(ref, base, jobs=jobs, progress=progress, **search)
        finally:
            close()
    rate = report.examples / report.seconds if report.seconds else 0.0
    say = partial(print, file=sys.stderr if args.json else sys.stdout)  # --json: stdout is the JSON alone
    say(f"acksim check: {ref} ({describe(base)})")
    if args.exhaustive:
        say(f"exhaustive scope: {scope_text}")
        say(f"schedules in the scope: {total}; run: {report.examples} in {report.seconds:.1f} s ({rate:.1f}/s)" + (
            "" if report.findings or report.out_of_time else "; no violation in any schedule within this scope"))
    else:
        say(f"examples run (shrinking included): {report.examples} in {report.seconds:.1f} s "
            f"({rate:.1f} examples/s), seed {args.seed}" + (
                " on the Dask cluster" if dask else f", {jobs} searches in parallel" if jobs > 1 else ""))
    for line in search_lines(report, args.max_examples, max_time_s, args.all_findings, args.exhaustive):
        say(line)
    say("crash phases covered: " + ", ".join(f"{p} {report.phases[p]}" for p in
                                                ("before_call", "after_call", "after_commit", "during_ack")))
    say("hazard windows (examples that hit each):")
    for name, _fn in HAZARDS:
        outside = report.scope is not None and name not in report.scope
        say(f"  {name:<42} {report.coverage[name]:>6}" + (
            "   (outside the scope)" if outside else "   WARNING: never hit" if not report.coverage[name] else ""))
    report, flaky = confirm_findings(report, ref, folder)
    verdict = check_verdict(report, flaky, args.require_coverage)
    lines = verdict_lines(verdict)
    try:
        written = save_findings(report, ref, out, Path(args.save_corpus) if args.save_corpus else None,
                                processor_path=folder)
    except OSError as exc:  # a full disk: the verdict still prints, then one line (exit 4)
        say(f"\n{lines[0]}; replay files not written")
        from acksim.report.outdir import output_error

        raise output_error(exc) from None
    for line in render_findings(report, written):
        say(line)
    for line in render_flaky(flaky):
        say(line)
    if args.junit_xml:
        suite = junit_suite(report, ref, written, args.require_coverage, base.invariants.names)
        write_junit(args.junit_xml, [replace(suite, seconds=report.seconds)])
    for line in lines:
        say(f"\n{line}")
    if args.json:
        print(json.dumps(check_json(report, ref, describe(base), verdict, written, flaky), indent=2))
    return 0 if verdict["verdict"] == "PASS" else 1


def _progress_bar(total: int):
    """A tqdm bar over examples on a terminal (none otherwise): ``(update(n), close())``.
    ``total`` is one round's budget; shrinking and later rounds grow it as they go."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="example", desc="checking", file=sys.stderr, leave=False)

    def update(n: int) -> None:
        if n > bar.total:
            bar.total = round(n * 1.25)
            bar.set_description("shrinking, searching on")
        bar.n = n
        bar.refresh()

    return update, bar.close
