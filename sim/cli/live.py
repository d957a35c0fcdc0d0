"""``acksim live SCENARIO --broker redis|rabbitmq|sqs [--time-scale F] [--out DIR]
[--processor REF | --candidate NAME] [--seed N] [--max-wall-s S]``: the scenario against a
real broker, real worker processes and one real SQLite file (``acksim.live``), judged and
reported exactly as ``acksim run`` (summary.json gains a ``live`` section).

Exit codes as ``acksim run``: 0 PASS, 1 FAIL, 2 bad input (a missing broker binary or client
module among them: one line naming the package), 130 interrupted (brokers and workers stopped).
"""

from __future__ import annotations

import math
import signal
import sys
from pathlib import Path

from acksim.report.outdir import UsageError, check_out_dir, safe_name
from acksim.scenario import ScenarioError, load, with_overrides

BROKERS = ("redis", "rabbitmq", "sqs")


def add_live_parser(sub) -> None:
    """The ``live`` subcommand's arguments."""
    p = sub.add_parser("live", help="run a scenario against a real broker (redis, rabbitmq or sqs)")
    p.add_argument("scenario", help="scenario TOML file (e.g. scenarios/live-smoke.toml)")
    p.add_argument("--broker", required=True, choices=BROKERS, help="the real broker to start and use")
    p.add_argument("--time-scale", type=float, default=None,
                   help="wall seconds per virtual second (default 0.05: 20 virtual seconds pass per wall second)")
    p.add_argument("--out", help="report folder (default: reports/<scenario name>-live-<broker>)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--processor", metavar="REF", help="code under test, package.module:function or "
                                                         "path/to/file.py:function")
    who.add_argument("--candidate", metavar="NAME", help="a bundled candidate design from acksim.model.candidates "
                                                         "(its processor and design options)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--max-wall-s", type=float, default=None,
                   help="stop a run that has not drained after this many wall seconds "
                        "(default: the planned span scaled x 1.5 + 60 s)")


def live_scenario(args):
    """The scenario and processor reference the arguments name: ``(scenario, ref)``, the
    candidate's design options applied (stores forced to the SQLite backend). Raises
    ``ScenarioError`` / ``UsageError`` (one line naming the field)."""
    from acksim.live.preflight import check_live_scenario
    from acksim.live.run import DEFAULT_TIME_SCALE
    from acksim.search.candidates import candidate_design
    from acksim.search.check import base_scenario
    from acksim.search.design import design_of
    from acksim.world.sandbox.supervised import check_loads

    scale = DEFAULT_TIME_SCALE if args.time_scale is None else args.time_scale
    if not (math.isfinite(scale) and 0.001 <= scale <= 10.0):
        raise UsageError(f"--time-scale: must be 0.001 .. 10 wall seconds per virtual second, got {scale:g}")
    if args.max_wall_s is not None and not (math.isfinite(args.max_wall_s) and 1 <= args.max_wall_s <= 86400):
        raise UsageError(f"--max-wall-s: must be 1 .. 86400, got {args.max_wall_s:g}")
    scenario = with_overrides(load(args.scenario), seed=args.seed)
    design: dict = {}
    ref = args.processor
    if args.candidate:
        ref, design = candidate_design(args.candidate)
        if design.get("stores", {}).get("isolation", "serializable") != "serializable":
            raise UsageError(f"--candidate {args.candidate}: needs read committed isolation, which SQLite "
                             "(the live store) does not offer")
    scenario = base_scenario(scenario, design_of({"backend": "sqlite"}, over=design))
    check_live_scenario(scenario, args.broker)
    ref = ref or scenario.processor
    check_loads(ref, "--processor" if args.processor else "processor")  # loaded in a child, not here
    return scenario, ref, scale


def cmd_live(args) -> int:
    """Run ``acksim live``; returns the exit code."""
    from acksim.judges.summary import build_summary, passed, reasons_text
    from acksim.live.run import run_live
    from acksim.report import write_report

    scenario, ref, scale = live_scenario(args)
    out = Path(args.out) if args.out else Path("reports") / f"{safe_name(scenario.name)}-live-{args.broker}"
    check_out_dir(out)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_live(scenario, args.broker, ref, scale, args.max_wall_s)
    finally:
        signal.signal(signal.SIGTERM, previous)
    outcome = result.outcome
    summary = build_summary(scenario, outcome, ref)
    summary["live"] = result.live
    q = result.live["queue"]
    write_report(out, summary, outcome.history,
                 title=f"acksim live: {scenario.name} (seed {scenario.seed}) on {args.broker} {result.live['version']}")
    if outcome.final.stopped_early:
        print(f"acksim: warning: stopped early: {outcome.final.stop_reason}", file=sys.stderr)
    for note in q["notes"]:
        print(f"acksim live: note: {note}", file=sys.stderr)
    c = summary["counts"]
    print(f"{summary['verdict']}: {scenario.name} seed {scenario.seed} live on {args.broker} "
          f"{result.live['version']} (time scale {scale:g}, {result.live['wall_s']:.1f} wall s): "
          f"{c['jobs']} jobs, {c['deliveries']} deliveries, {c['crashes']} crashes; "
          f"{reasons_text(summary)}; report: {out}")
    return 0 if passed(summary) else 1


def _terminate(signum, frame):
    raise KeyboardInterrupt


__all__ = ["add_live_parser", "cmd_live", "live_scenario", "ScenarioError"]


def add_crosscheck_parser(sub) -> None:
    """The ``crosscheck`` subcommand's arguments."""
    from acksim.live.crosscheck import TARGET_WALL_S

    p = sub.add_parser("crosscheck", help="run schedules both in the simulation and live on a real broker, "
                                          "and report where their verdicts differ")
    p.add_argument("scenario", nargs="*", help="scenario TOML files (each one schedule, the reference processor "
                                               "or --processor)")
    p.add_argument("--broker", required=True, choices=BROKERS, help="the real broker to start and use")
    p.add_argument("--runs", type=int, default=0,
                   help="also N schedules drawn from acksim check's strategy with candidate designs, about a third "
                        "of them violating an invariant in the simulation (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the drawn schedules (default 0)")
    p.add_argument("--processor", metavar="REF", help="code under test for the scenario files")
    p.add_argument("--time-scale", type=float, default=None,
                   help=f"wall seconds per virtual second (default: each schedule's span fitted to "
                        f"~{TARGET_WALL_S:g} wall s, 0.005 .. 0.05)")
    p.add_argument("--out", default="reports/crosscheck", help="report folder (default reports/crosscheck)")


def cmd_crosscheck(args) -> int:
    """Run ``acksim crosscheck``; returns 0 when every schedule agrees, 1 otherwise."""
    from acksim.live.crosscheck import fit_scale, for_broker, livable, pick, run_rows
    from acksim.live.crosscheck_report import write_crosscheck
    from acksim.model.candidates import CANDIDATES
    from acksim.world.sandbox.supervised import check_loads

    if not args.scenario and args.runs <= 0:
        raise UsageError("crosscheck: give at least one scenario file or --runs N")
    if not 0 <= args.runs <= 1000:
        raise UsageError(f"--runs: must be 0 .. 1000, got {args.runs}")
    if args.time_scale is not None and not (math.isfinite(args.time_scale) and 0.001 <= args.time_scale <= 10.0):
        raise UsageError(f"--time-scale: must be 0.001 .. 10 wall seconds per virtual second, got {args.time_scale:g}")
    ref = args.processor or "acksim.model.processor:process"
    check_loads(ref, "--processor")  # loaded in a child, not here
    out = Path(args.out)
    check_out_dir(out)
    todo = []
    for p in args.scenario:
        sc = livable(load(p))
        scale = fit_scale(sc) if args.time_scale is None else args.time_scale
        todo.append((Path(p).stem, "reference" if not args.processor else "--processor",
                     for_broker(sc, args.broker, scale), ref, scale))
    for i, (name, sc, _violates) in enumerate(pick(args.runs, args.seed, args.broker, args.time_scale)
                                              if args.runs else []):
        cand = CANDIDATES[name].processor
        scale = fit_scale(sc) if args.time_scale is None else args.time_scale
        todo.append((f"drawn-{i + 1}", name, sc, f"{cand.__module__}:{cand.__name__}", scale))

    def show(row):
        print(f"acksim crosscheck: {row.label} ({row.candidate}, scale {row.scale:g}, {row.wall_s:.1f} wall s): "
              f"{'agree' if row.agrees else 'DISAGREE'}; sim violates "
              f"{[n for n, v in row.sim.items() if not v['holds']]}, live violates "
              f"{[n for n, v in row.live.items() if not v['holds']]}"
              + (f"; live stopped early: {row.live_info.get('stop_reason')}" if row.live_info.get("stop_reason")
                 else ""), flush=True)

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        rows = run_rows(todo, args.broker, show)
    finally:
        signal.signal(signal.SIGTERM, previous)
    doc = write_crosscheck(out, rows, args.broker)
    print(f"crosscheck on {args.broker}: {doc['agreeing']} of {doc['schedules']} schedules agree "
          f"({doc['agreement_rate']:.0%}), {doc['verdicts_agreeing']} of {doc['verdicts']} verdicts "
          f"({doc['verdict_agreement_rate']:.1%}); {doc['sim_violating']} violate an invariant in the simulation; "
          f"report: {out / 'crosscheck.md'}")
    return 0 if doc["agreeing"] == doc["schedules"] else 1
