"""The ``acksim check`` command: arguments, the search, and how a finding is shown and saved.

Exit codes: 0 nothing found (and, with ``--require-coverage``, every hazard window hit); 1 a
finding (an invariant violated, an error of the processor's own, a hung processor), a flaky
finding (one whose replay file did not give the same findings and history in a fresh process:
``acksim.search.selfcheck``; every finding is replayed so before it is reported) or an
uncovered hazard window under ``--require-coverage``; 2 bad input (a processor reference that
does not load, a bad scenario or option).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

from acksim.search.check import FINDINGS, PROCESSOR_FINDINGS, base_scenario, history_digest, replay_text, schedule, timeline
from acksim.judges.hazards import HAZARDS
from acksim.report.junit import check_junit_path, check_suite, write_junit
from acksim.report.outdir import UsageError, check_out_dir, safe_name
from acksim.world.processor_ref import canonical_ref, processor_folder
from acksim.world.supervised import check_loads
from acksim.scenario import load

DESIGN_FLAGS = (  # (flag, scenario section, key, choices)
    ("--ack-policy", "workers", "ack_policy", ("after_commit", "before_processing")),
    ("--transaction-scope", "workers", "transaction_scope", ("unit_of_work", "autocommit")),
    ("--isolation", "stores", "isolation", ("serializable", "read_committed")),
    ("--backend", "stores", "backend", ("memory", "sqlite")),
    ("--unique-markers", "stores", "unique_markers", ("on", "off")),
    ("--unique-outbox-keys", "stores", "unique_outbox_keys", ("on", "off")),
)


def add_check_parser(sub) -> None:
    """Add the ``check`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("check", help="search fault schedules for an invariant violation of a design")
    p.add_argument("scenario", nargs="?", help="base scenario whose queue, workers, stores and mail settings "
                                               "the examples start from (default: a small built-in one)")
    p.add_argument("--processor", metavar="REF", help="package.module:function or path/to/file.py:function "
                                                      "(default: the reference acksim.model.processor:process)")
    p.add_argument("--candidate", metavar="NAME", help="a bundled candidate design (processor and design "
                                                       "options) from acksim.model.candidates; see README")
    p.add_argument("--max-examples", type=int, default=500, help="examples to try, 1 .. 1,000,000 (default 500)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="independent searches on N processes, the examples split between them, one "
                        "example database (default: every processor this process may use; 1 .. 256)")
    for flag, _section, _key, choices in DESIGN_FLAGS:
        p.add_argument(flag, choices=choices, help="design option (default: the base scenario's)")
    p.add_argument("--out", default="reports/check", help="folder for replay files (default reports/check)")
    p.add_argument("--save-corpus", metavar="DIR", help="also save each counterexample's replay file here")
    p.add_argument("--require-coverage", action="store_true",
                   help="fail (exit 1) when a hazard window was never hit")
    p.add_argument("--database", default=".hypothesis/acksim",
                   help="Hypothesis example database folder; earlier counterexamples are tried first")
    p.add_argument("--no-database", action="store_true", help="use no example database")
    p.add_argument("--junit-xml", metavar="FILE", help="also write the result as JUnit XML: a test case per "
                                                       "invariant and finding kind, and per hazard window")


def cmd_check(args) -> int:
    """Run ``acksim check``; returns the exit code."""
    if not 1 <= args.max_examples <= 1_000_000:
        raise UsageError(f"--max-examples: must be 1 .. 1000000, got {args.max_examples}")
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed: must be 0 .. 2**63-1, got {args.seed}")
    from acksim.search.parallel import default_jobs, run_checks

    jobs = default_jobs() if args.jobs is None else args.jobs
    if not 1 <= jobs <= 256:
        raise UsageError(f"--jobs: must be 1 .. 256, got {jobs}")
    from acksim.cli.candidates import resolve

    ref, design = resolve(args.candidate, args.processor)  # design flags below override the candidate's
    for flag, section, key, _choices in DESIGN_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            design.setdefault(section, {})[key] = {"on": True, "off": False}.get(value, value)
    base = base_scenario(load(args.scenario) if args.scenario else None, design)
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

    progress, close = _progress_bar(args.max_examples)
    try:
        report = run_checks(ref, base, jobs=jobs, max_examples=args.max_examples, seed=args.seed,
                           database=None if args.no_database else Path(args.database),
                           key=f"{ref}|{describe(base)}", progress=progress)
    finally:
        close()
    rate = report.examples / report.seconds if report.seconds else 0.0
    print(f"acksim check: {ref} ({describe(base)})")
    print(f"examples run (shrinking included): {report.examples} in {report.seconds:.1f} s "
          f"({rate:.1f} examples/s), seed {args.seed}" + (f", {jobs} searches in parallel" if jobs > 1 else ""))
    print("crash phases covered: " + ", ".join(f"{p} {report.phases[p]}" for p in
                                                ("before_call", "after_call", "after_commit", "during_ack")))
    print("hazard windows (examples that hit each):")
    for name, _fn in HAZARDS:
        print(f"  {name:<42} {report.coverage[name]:>6}" + ("   WARNING: never hit" if not report.coverage[name] else ""))
    report, flaky = confirm_findings(report, ref, folder)
    try:
        written = save_findings(report, ref, out, Path(args.save_corpus) if args.save_corpus else None,
                                processor_path=folder)
    except OSError as exc:  # a full disk: the verdict still prints, then one line (exit 4)
        print(f"\nFAIL: {len(report.findings)} kind(s) of finding: {', '.join(report.findings)}; replay files not written")
        from acksim.report.outdir import output_error

        raise output_error(exc) from None
    for line in render_findings(report, written):
        print(line)
    for line in render_flaky(flaky):
        print(line)
    uncovered = report.uncovered
    if args.junit_xml:
        write_junit(args.junit_xml, [junit_suite(report, ref, written, args.require_coverage)])
    if report.findings or flaky:
        if report.findings:
            print(f"\nFAIL: {len(report.findings)} kind(s) of finding: {', '.join(report.findings)}")
        if flaky:
            print(f"\nFAIL: {len(flaky)} flaky finding(s), not reproduced in a fresh process: "
                  f"{', '.join(flaky)}; the search itself is not deterministic for this processor "
                  "(state that outlives a run: see README, \"What runs as in production\")")
        return 1
    if uncovered and args.require_coverage:
        print(f"\nFAIL: hazard windows never hit: {', '.join(uncovered)} (--require-coverage)")
        return 1
    print(f"\nPASS: no violation in {report.examples} examples" +
          (f"; never hit: {', '.join(uncovered)}" if uncovered else "; every hazard window hit"))
    return 0


def confirm_findings(report, ref: str, processor_path: str | None):
    """Replay each finding's replay file in a fresh process (``acksim.search.selfcheck``):
    returns (the report with only the findings that came back the same, findings and history
    hash; {name: (scenario, result, what differed)} for the flaky ones)."""
    import tempfile

    from acksim.search.selfcheck import differences, replay_in_fresh_process

    confirmed, flaky = {}, {}
    with tempfile.TemporaryDirectory(prefix="acksim-selfcheck-") as tmp:
        for name, (scenario, result) in report.findings.items():
            path = Path(tmp) / f"{safe_name(name)}.toml"
            path.write_text(replay_text(scenario, result, ref, processor_path), encoding="utf-8")
            diff = differences(result.failures, history_digest(result.history), replay_in_fresh_process(path))
            if diff:
                flaky[name] = (scenario, result, diff)
            else:
                confirmed[name] = (scenario, result)
    return replace(report, findings=confirmed), flaky


def render_flaky(flaky: dict) -> list[str]:
    """Each flaky finding: what the search saw, what a fresh process saw instead, the schedule."""
    lines: list[str] = []
    for name, (scenario, result, diff) in flaky.items():
        lines.append(f"\nflaky finding {name}: the search saw {', '.join(result.failures)}, but its replay in a "
                     f"fresh process gave {'; '.join(diff)}; not a counterexample")
        lines.append("  schedule (as searched):")
        lines += [f"    {line}" for line in schedule(scenario)]
    return lines


def junit_suite(report, ref: str, replay_paths: list[Path], require_coverage: bool):
    """The JUnit suite of a check: a case per finding kind (an invariant, the processor's own
    error, a hung processor), failing with the finding as ``render_findings`` prints it (the
    first violation, the shrunk schedule, the timeline, the replay command), and a case per
    hazard window (failing when never hit under ``--require-coverage``)."""
    texts = {name: "\n".join(render_findings(replace(report, findings={name: finding}), [path])).strip()
             for (name, finding), path in zip(report.findings.items(), replay_paths)}
    return check_suite(f"check {ref}", texts, FINDINGS,
                       {name: report.coverage[name] for name, _fn in HAZARDS}, require_coverage)


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


def render_findings(report, replay_paths: list[Path]) -> list[str]:
    """Each finding as text: what broke, the shrunk schedule, the timeline, the replay command."""
    lines: list[str] = []
    for (name, (scenario, result)), path in zip(report.findings.items(), replay_paths):
        lines.append(f"\nFOUND {name}: {', '.join(result.failures)}")
        for kind, verdict in result.verdicts.items():
            if not verdict["holds"] and name not in PROCESSOR_FINDINGS:
                lines.append(f"  {kind}: {verdict['violations']} violation(s); first: {verdict['example']}")
        if result.errors:
            lines.append("  the processor's own error:\n    " + result.errors[0].rstrip().replace("\n", "\n    "))
        lines.append("  schedule (shrunk):")
        lines += [f"    {line}" for line in schedule(scenario)]
        lines.append("  timeline:")
        lines += [f"    {line}" for line in timeline(result.history)]
        lines.append(f"  replay: acksim run {shlex.quote(str(Path(path).resolve()))}")  # verbatim, from any folder
    return lines


def describe(base) -> str:
    """The design options of a base scenario, in one line."""
    w, s = base.workers, base.stores
    return (f"ack {w.ack_policy}, {w.transaction_scope}, {s.backend} {s.isolation}, "
            f"unique markers {'on' if s.unique_markers else 'off'}, "
            f"unique outbox keys {'on' if s.unique_outbox_keys else 'off'}")


def absolute_ref(ref: str) -> str:
    """A file reference made absolute, an old acksim name replaced by its new one
    (``acksim.world.processor_ref.canonical_ref``); other module references as they are."""
    return canonical_ref(ref)


def design_tag(scenario) -> str:
    """The design options that differ from the reference design, for file names:
    e.g. ``autocommit`` or ``read-committed+no-unique-markers``; empty for the reference."""
    w, s = scenario.workers, scenario.stores
    tags = [tag for tag, on in (
        ("ack-before-processing", w.ack_policy == "before_processing"),
        ("autocommit", w.transaction_scope == "autocommit"),
        ("read-committed", s.isolation == "read_committed"),
        ("no-unique-markers", not s.unique_markers),
        ("no-unique-outbox-keys", not s.unique_outbox_keys),
        ("sqlite", s.backend == "sqlite")) if on]
    return "+".join(tags)


def replay_stem(ref: str, scenario, finding: str) -> str:
    """The file name (without suffix) of ``finding``'s replay file: the processor (module stem
    and function), the design tag and the finding name, at most 80 characters. A long
    processor or design part is cut, never the finding name, so the findings of one check get
    one file each."""
    module, _, function = ref.rpartition(":")
    short = Path(module).stem if module.endswith(".py") else module
    prefix = safe_name("-".join(p for p in (f"{short}.{function}", design_tag(scenario)) if p))
    return f"{prefix[:79 - len(finding)]}-{finding}"


def save_findings(report, ref: str, out: Path, corpus: Path | None, processor_path: str | None = None) -> list[Path]:
    """Write one replay file per finding into ``out`` (and ``corpus``), with its timeline as a
    swimlane PNG beside it in ``out``; returns the replay files' paths. ``processor_path``:
    the folder the processor's module imports from, recorded in the file (None: none)."""
    paths = []
    for name, (scenario, result) in report.findings.items():
        from acksim.report.plots.counterexample import plot_counterexample  # matplotlib: only for a finding

        text = replay_text(scenario, result, ref, processor_path)
        stem = replay_stem(ref, scenario, name)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{stem}.toml"
        path.write_text(text, encoding="utf-8")
        examples = [v["example"] for v in result.verdicts.values() if not v["holds"] and v.get("example")]
        (out / f"{stem}.png").write_bytes(plot_counterexample(result.history, examples))  # the timeline, drawn
        paths.append(path)
        if corpus is not None:
            corpus.mkdir(parents=True, exist_ok=True)
            (corpus / f"{stem}.toml").write_text(text, encoding="utf-8")
    return paths


def replay_lines(scenario, history, summary) -> list[str]:
    """A replay's verdict line (``replay_verdict``), then its text timeline (``timeline``)."""
    return [replay_verdict(scenario, history, summary), *timeline(history)]


def replay_verdict(scenario, history, summary) -> str:
    """One line: did this run reproduce what the replay file recorded?"""
    expect = scenario.expect
    violated = tuple(n for n, v in summary["invariants"].items() if not v["holds"])
    errors = bool(summary["counts"].get("processor_errors") or summary.get("contained"))
    same_history = not expect.history_sha256 or history_digest(history) == expect.history_sha256
    if violated == tuple(expect.violated) and errors == expect.processor_error and same_history:
        return (f"replay: reproduced ({', '.join(violated) or 'no violation'}"
                f"{', processor error' if errors else ''}; same history, record for record)")
    return (f"replay: NOT reproduced: expected {list(expect.violated)} processor_error={expect.processor_error}, "
            f"got {list(violated)} processor_error={errors}; history {'same' if same_history else 'differs'}")
