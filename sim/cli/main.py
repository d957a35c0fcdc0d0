"""The command line: ``acksim run [SCENARIO] [--seed N] [--out DIR] [--junit-xml FILE]``, and
the ``check``, ``sweep``, ``compare``, ``presets`` and ``schema`` commands.

Exit codes (fixed, docs/DESIGN.md): 0 every invariant holds and every SLO threshold is met; 1 an
invariant is violated or a threshold missed; 2 bad input (scenario, arguments), reported as
one line on stderr with nothing written. Beyond those: 3 an internal error of acksim itself
(with its traceback); 4 the results could not be written (a full disk, a read-only folder:
one line naming the file and the OS's reason, after the verdict when it was computed); 130
interrupted (Ctrl-C or SIGTERM alike, ``acksim.interrupts``; pool workers terminated,
temporary folders removed, no report written).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

from importlib import import_module

from acksim.interrupts import handled
from acksim.printable import shown_path
from acksim.report.outdir import OutputError, UsageError, check_out_dir, output_error, safe_name
from acksim.scenario.base import ScenarioError

# Each command's module (and with it SimPy, Hypothesis, pandas, matplotlib) is imported only
# when that command runs, so ``acksim presets``, ``--help`` and a bad-input error answer fast.
COMMANDS: dict[str, tuple[str, str, str]] = {  # name: (module, add_parser, command)
    "check": ("acksim.cli.check", "add_check_parser", "cmd_check"),
    "sweep": ("acksim.cli.sweep", "add_sweep_parser", "cmd_sweep"),
    "compare": ("acksim.cli.compare", "add_compare_parser", "cmd_compare"),
    "live": ("acksim.cli.live", "add_live_parser", "cmd_live"),
    "crosscheck": ("acksim.cli.live", "add_crosscheck_parser", "cmd_crosscheck"),
    "diff": ("acksim.cli.diff", "add_diff_parser", "cmd_diff"),
    "init": ("acksim.cli.init", "add_init_parser", "cmd_init"),
}
HELP = {"check": "search fault schedules for a design's invariant violations (Hypothesis)",
        "sweep": "run a grid of scenarios (capacity planning)",
        "compare": "run one scenario on each queue preset and compare them",
        "live": "run a scenario against a real broker (Redis Streams, RabbitMQ, SQS on moto)",
        "crosscheck": "run schedules both in the simulation and live, and compare the verdicts",
        "diff": "compare a run's summary.json with a baseline's; exit 1 on a regression",
        "init": "write a processor, a pytest check of it, a scenario and a CI job into a folder"}

DEFAULT_SCENARIO = "game-renewal.toml"  # bundled with acksim (acksim.scenarios), found from any folder


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        self.exit(2, f"acksim: error: {message}\n")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; the subcommands of ``COMMANDS`` get their full parser only when
    ``command`` names them (their modules are heavy), a stub with their help line otherwise."""
    p = _Parser(prog="acksim", description="Simulate and verify a queue-driven cleanup pipeline.")
    p.add_argument("--version", action="version", version=f"acksim {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="simulate a scenario and write its report")
    run.add_argument("scenario", nargs="?", default=None,
                     help="scenario TOML file, or a bundled scenario by name (`acksim scenarios` lists them; "
                          "default: the bundled game-renewal scenario)")
    run.add_argument("--seed", type=int, help="override the scenario's seed (0 .. 2**63-1)")
    run.add_argument("--out", help="report folder (default: reports/<scenario name>)")
    run.add_argument("--processor", metavar="REF",
                     help="code under test, package.module:function or path/to/file.py:function "
                          "(default: the scenario's processor, the reference acksim.model.processor:process)")
    run.add_argument("--candidate", metavar="NAME", help="a bundled candidate design (its processor and design "
                                                         "options) from acksim.model.candidates; see docs/check.md")
    run.add_argument("--junit-xml", metavar="FILE",
                     help="also write the verdict as JUnit XML: one test case per invariant and SLO figure")
    run.add_argument("--backend", choices=("sqlite", "memory", "postgres"),
                     help="override stores.backend (postgres: a private PostgreSQL acksim starts and stops, "
                          "or the server ACKSIM_POSTGRES_DSN names; see docs/postgres.md)")
    run.add_argument("--isolation", choices=("serializable", "repeatable_read", "read_committed"),
                     help="override stores.isolation (sqlite: serializable only; memory: not repeatable_read)")
    run.add_argument("--invariant", action="append", default=[], metavar="REF",
                     help="an invariant of your own, package.module:function or path/to/file.py:function, "
                          "judged beside the built-in five (repeatable; see docs/history.md)")
    run.add_argument("--json", action="store_true",
                     help="print summary.json to stdout (the verdict line goes to stderr)")
    for name, (module, add_parser, _cmd) in COMMANDS.items():
        if name == command:
            getattr(import_module(module), add_parser)(sub)
        else:
            sub.add_parser(name, help=HELP[name], add_help=False).add_argument("rest", nargs=argparse.REMAINDER)
    schema = sub.add_parser("schema", help="print the JSON Schema of a scenario file or of summary.json")
    schema.add_argument("which", choices=("scenario", "summary"), help="scenario or summary")
    sub.add_parser("scenarios", help="list the bundled scenarios, incidents and sweeps, by the name to give "
                                     "run, check, compare, sweep and live")
    presets = sub.add_parser("presets", help="list the queue and scheduler presets, or show one")
    presets.add_argument("name", nargs="?", help="a preset to show with every default and its source")
    return p


def _version() -> str:
    from acksim import __version__

    return __version__


def cmd_presets(args) -> int:
    """Print the presets, or one preset's defaults with their sources; returns the exit code."""
    from acksim.scenario.presets import PRESETS, listing

    if args.name is None:
        print(listing())
    elif args.name in PRESETS:
        print(PRESETS[args.name].doc)
    else:
        raise UsageError(f"presets: unknown preset {args.name!r}; allowed: {', '.join(PRESETS)}")
    return 0


def _progress_bar(total: float):
    """A tqdm bar over virtual seconds on a terminal (none otherwise). ``total`` is the last
    planned event; the drain after it (roll-overs, redeliveries) grows the total as it goes."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    from acksim.world.sandbox.vclock import real_time

    bar = tqdm(total=round(total), unit="vs", desc="simulating", file=sys.stderr, leave=False)
    bar._time = real_time  # the world's wall clocks read virtual time while it runs

    def update(now: float) -> None:
        if now > bar.total:
            bar.total = round(now * 1.05)
            bar.set_description("draining")
        bar.n = round(now)
        bar.refresh()

    return update, bar.close


def cmd_run(args) -> int:
    """Run one scenario; returns the exit code."""
    from acksim.scenario import load, with_overrides

    if args.scenario is None:
        from acksim.scenarios import bundled

        args.scenario = str(bundled(DEFAULT_SCENARIO))
    scenario = with_overrides(load(args.scenario), seed=args.seed,  # bad input answers before heavy imports
                              invariants=args.invariant)
    from acksim.scenario import parse
    from acksim.search.candidates import resolve as resolve_candidate
    from acksim.search.design import merge_design

    args.processor, design = resolve_candidate(args.candidate, args.processor)
    stores = {key: value for key, value in (("backend", args.backend), ("isolation", args.isolation)) if value}
    if stores:  # the command line's choice over the candidate's and the file's
        design = {**design, "stores": {**design.get("stores", {}), **stores}}
    if design:
        scenario = parse(merge_design(scenario.model_dump(), design), "--candidate" if args.candidate else "--backend")
    from acksim.search.replay import replay_lines
    from acksim.judges.summary import build_summary, passed, reasons_text
    from acksim.report import write_report
    from acksim.report.junit import check_junit_path, run_suite
    from acksim.world.core import World, stores_server
    from acksim.world.sandbox.supervised import check_loads, run_world

    if scenario.fanout.updates:
        return _run_fanout(scenario, args)
    ref = args.processor or scenario.processor
    check_loads(ref, "--processor" if args.processor else "processor", path=scenario.processor_path)  # exit 2
    out = Path(args.out) if args.out is not None else default_out(args.scenario, scenario)
    check_out_dir(out)
    if args.junit_xml:
        check_junit_path(args.junit_xml, out=out)
    bar: dict = {}

    def planned_end(end_s: float) -> None:
        bar["update"], bar["close"] = _progress_bar(end_s)

    # the world runs in a supervised child (acksim.world.sandbox.supervised), by reference: each worker
    # start gets a fresh copy of the code; SIGTERM and Ctrl-C kill the child and unwind here
    tty = sys.stderr.isatty()
    started = time.monotonic()
    try:
        with stores_server(scenario):  # a private PostgreSQL, started here and always stopped
            run = run_world(scenario, ref, world=World, planned_end=planned_end if tty else None,
                            progress=(lambda now: bar.get("update") and bar["update"](now)) if tty else None)
    finally:
        if bar.get("close"):
            bar["close"]()
    outcome = run.outcome
    if run.import_error is not None:  # a broken environment: no verdict, no report
        raise ScenarioError(f"{'--processor' if args.processor else 'processor'}: the processor raised "
                            f"{run.import_error} while running; install what it imports (exit 2, no verdict)")
    summary = build_summary(scenario, outcome, args.processor)
    replay = replay_lines(scenario, outcome.history, summary) if scenario.expect is not None else []
    verdict = (f"{summary['verdict']}: {scenario.name} seed {scenario.seed}: "
               f"{summary['counts']['jobs']} jobs, {summary['counts']['crashes']} crashes; {reasons_text(summary)}")
    try:
        write_report(out, summary, outcome.history, title=f"acksim: {scenario.name} (seed {scenario.seed})",
                     full_timeline=bool(scenario.plan.accounts), replay=replay,
                     kind="replay" if replay else "run")
    except OSError as exc:
        raise _not_written(verdict, exc, f"the report {shown_path(out)}") from None
    ok = passed(summary)
    for when, worker, mid, text in run.processor_errors[:1] if not run.contained else ():  # (said below)
        print(f"acksim: the processor raised an error of its own ({len(run.processor_errors)} in all); "
              f"the first, at {when:.4f} s in {worker} on message {mid}:\n{text.rstrip()}", file=sys.stderr)
    threads_warning(run.threads)
    human = sys.stderr if args.json else sys.stdout  # --json: stdout is the summary alone
    if replay:
        print(replay[0], file=human)
    if outcome.final.stopped_early:
        print(f"acksim: warning: stopped early: {outcome.final.stop_reason or 'the processor failed'}",
              file=sys.stderr)
    print(f"{verdict}; report: {shown_path(out)}", file=human)
    if args.json:
        sys.stdout.write((out / "summary.json").read_text(encoding="utf-8"))
    _junit(args, [replace(run_suite(summary), seconds=time.monotonic() - started)])
    return 0 if ok else 1


def threads_warning(threads: tuple[str, ...]) -> None:
    """One line on stderr when the processor left non-daemon threads running (``threads``,
    their names): they were stopped with its supervised worker process, not waited for."""
    if threads:
        names = sorted(set(threads))
        shown = ", ".join(one_line(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
        print(f"acksim: warning: the processor left {len(threads)} non-daemon thread(s) running ({shown}); "
              "they were stopped with its worker process", file=sys.stderr)


def _not_written(verdict: str, exc: OSError, what: str) -> OutputError:
    """Print the verdict computed before a write failed; the error to raise (exit 4)."""
    print(f"{verdict}; report not written")
    return output_error(exc, what)


def default_out(scenario_file: str, scenario) -> Path:
    """Where ``acksim run`` writes without ``--out``: beside a replay file (one with an
    ``[expect]`` table), in a folder of its own named after it (``<stem>.report``), never the
    folder of replay files it lives in; else ``reports/<scenario name>``."""
    if scenario.expect is not None:
        path = Path(scenario_file)
        return path.with_name(f"{path.stem}.report")
    return Path("reports") / safe_name(scenario.name)


def _run_fanout(scenario, args) -> int:
    """``acksim run`` of a scenario with a ``[fanout]`` table: the shipment fan-out design."""
    from acksim.judges.fanout import build_fanout_summary
    from acksim.report import write_report
    from acksim.report.junit import check_junit_path, run_suite
    from acksim.world.fanout import FANOUT_PARAMS, FanoutWorld
    from acksim.world.sandbox.supervised import check_loads, run_world
    from acksim.judges.summary import passed, reasons_text

    ref, field = (args.processor, "--processor") if args.processor else (scenario.fanout.processor, "fanout.processor")
    check_loads(ref, field, FANOUT_PARAMS, path=scenario.processor_path)  # bad input: exit 2 (loaded in a child)
    out = Path(args.out) if args.out is not None else Path("reports") / safe_name(scenario.name)
    check_out_dir(out)
    if args.junit_xml:
        check_junit_path(args.junit_xml, out=out)
    started = time.monotonic()
    run = run_world(scenario, ref, world=FanoutWorld)  # in a supervised child, as acksim.world.sandbox.supervised says
    outcome = run.outcome
    summary = build_fanout_summary(scenario, outcome, args.processor)
    c = summary["counts"]
    verdict = (f"{summary['verdict']}: {scenario.name} seed {scenario.seed}: {c['updates']} updates x "
               f"{scenario.fanout.subscribers} subscribers, {c['updates_completed']} complete, {c['crashes']} crashes; "
               f"{reasons_text(summary)}")
    try:
        write_report(out, summary, outcome.history, title=f"acksim: {scenario.name} (seed {scenario.seed})")
    except OSError as exc:
        raise _not_written(verdict, exc, f"the report {shown_path(out)}") from None
    ok = passed(summary)
    print(f"{verdict}; report: {shown_path(out)}", file=sys.stderr if args.json else sys.stdout)
    if args.json:
        sys.stdout.write((out / "summary.json").read_text(encoding="utf-8"))
    _junit(args, [replace(run_suite(summary), seconds=time.monotonic() - started)])
    return 0 if ok else 1


def _junit(args, suites) -> None:
    """Write ``--junit-xml`` when given (``acksim.report.junit``)."""
    if getattr(args, "junit_xml", None):
        from acksim.report.junit import write_junit

        write_junit(Path(args.junit_xml), suites)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``acksim`` console script; returns the exit code."""
    words = sys.argv[1:] if argv is None else argv
    parser = _parser(next((w for w in words if not w.startswith("-")), None))
    if not words:
        parser.print_help(sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), as a return value
        return exc.code if isinstance(exc.code, int) else 2
    try:
        with handled():  # SIGINT and SIGTERM alike: KeyboardInterrupt, exit 130
            return _dispatch(args)
    except BrokenPipeError:  # the reader of stdout went away (``acksim presets | head -5``)
        _silence_stdout()
        return PIPE_CLOSED
    except (ScenarioError, UsageError) as exc:
        print(f"acksim: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OutputError as exc:
        print(f"acksim: error: {one_line(str(exc))}", file=sys.stderr)
        return OUTPUT_FAILED
    except OSError as exc:  # writing an output file (JUnit, replay file, ...): not a bug, not a verdict
        print(f"acksim: error: {one_line(str(output_error(exc)))}", file=sys.stderr)
        return OUTPUT_FAILED
    except RecursionError:  # input nested too deeply for some parser: bad input, not a bug
        print("acksim: error: input nested too deeply (arrays or tables); flatten it", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug of ours must not read as a verdict (exit 1)
        traceback.print_exc()
        print("acksim: internal error: the traceback above is a bug in acksim, not a verdict on the design",
              file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("acksim: interrupted; no report written (an earlier report there is intact)", file=sys.stderr)
        return 130


def _dispatch(args) -> int:
    """Run the chosen command; returns its exit code."""
    if args.command == "run":
        return cmd_run(args)
    if args.command in COMMANDS:
        module, _add_parser, command = COMMANDS[args.command]
        return getattr(import_module(module), command)(args)
    if args.command == "presets":
        return cmd_presets(args)
    if args.command == "scenarios":
        from acksim.scenarios import catalogue

        width = max(len(name) for name, _ in catalogue())
        for name, about in catalogue():
            print(f"{name:<{width}}  {about}")
        return 0
    if args.command == "schema":
        from acksim.report.schemas import shipped

        sys.stdout.write(shipped(args.which))
        return 0
    return 2


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters (a newline in a path or a name)
    shown as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


OUTPUT_FAILED = 4  # the results could not be written (full disk, read-only folder, I/O error)
PIPE_CLOSED = 141  # 128 + SIGPIPE, as a shell reports a pipeline whose reader left early


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush raises no second
    BrokenPipeError (the recipe of the Python documentation, "Note on SIGPIPE")."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def entry() -> None:
    """The ``acksim`` console script and ``python -m acksim``: ``main()``, then leave at once
    with its exit code (``os._exit`` after flushing stdout and stderr). An ordinary exit would
    finalize the interpreter, and with it run the code under test once more: abandoned
    attempts' greenlets are resumed to be collected, and threads the processor started are
    joined, so a processor that spins or left a thread behind would keep acksim from exiting
    after its verdict was printed. Every temporary folder and store was closed by then."""
    import os

    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say there
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
