"""The ``acksim init [DIR]`` command: a project that acksim checks, ready to run.

It writes a processor that follows the contract (``PACKAGE/processor.py``, the design
documents' steps, to be made your own), a pytest test that checks it with the
``acksim_check`` fixture at a budget that finds the bundled candidates' bugs, a small
scenario for ``acksim run``, a GitHub Actions job, and the ``.gitignore`` lines for what acksim
writes. ``pytest`` in the new folder passes at once; it fails as soon as the processor breaks
an invariant. Nothing is overwritten: a file that exists already stops the command (exit 2)
before anything is written, ``.gitignore`` apart, to which the missing lines are added.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from acksim.report.outdir import UsageError

PROCESSOR = '''"""The cleanup processor of {package}: one plain synchronous function, run by a worker for each
job it receives. The worker begins a transaction spanning the three stores, calls this, commits
when it returns and acks only after the commit; the outbox relay sends the reminder."""

from acksim.model.job import reminder_event_key


def process(job, accounts, cleanup_store, outbox):
    """Clean up the account once for this deadline, unless the job is stale."""
    account = accounts.get(job.account_id)
    if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
        return                                   # deleted, superseded or renewed: harmless
    if cleanup_store.was_applied(job.account_id, job.cleanup_version):
        return                                   # a redelivery of finished work
    cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
    outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                    account_id=job.account_id, cleanup_version=job.cleanup_version)
'''

TEST = '''"""acksim searches fault schedules (crashes, redeliveries, renewals at awkward moments) for
an invariant violation of the processor; a finding fails the test with the shrunk schedule,
its timeline and the command that replays it."""


def test_cleanup_keeps_the_invariants(acksim_check):
    report = acksim_check("{package}.processor:process", max_examples=60)
    assert not report.findings
'''

SCENARIO_HEAD = '''# {package}'s cleanup on the bundled smoke day (300 accounts across two hours, every kind
# of fault, SQLite stores). `acksim run scenarios/cleanup.toml` simulates it and writes
# reports/cleanup/.
name = "cleanup"
processor = "{package}.processor:process"
processor_path = ".."
'''


def scenario_text(package: str) -> str:
    """The bundled smoke scenario (``acksim.scenarios``) for ``package``'s processor: its own
    name, processor and ``processor_path`` (the project folder, from ``scenarios/``)."""
    from acksim.scenarios import bundled

    body = [line for line in bundled("smoke.toml").read_text(encoding="utf-8").splitlines(keepends=True)
            if not line.startswith(("#", "name ="))]
    return SCENARIO_HEAD.format(package=package) + "".join(body)


WORKFLOW = '''name: acksim
on: [push, pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install ./vendor/acksim pytest    # acksim (a checkout of it, or its wheel) and pytest
      - run: python -m pytest
      - run: >
          acksim check --processor {package}.processor:process --max-examples 1000
          --require-coverage --out acksim-report --junit-xml acksim-junit.xml
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: acksim-report
          path: |
            acksim-report/
            acksim-junit.xml
'''

GITIGNORE = ("reports/", ".hypothesis/", "acksim-report/", "acksim-junit.xml")


def add_init_parser(sub) -> None:
    """Add the ``init`` subcommand to the ``acksim`` argument parser."""
    p = sub.add_parser("init", help="write a processor, a pytest check of it, a scenario and a CI job into a folder")
    p.add_argument("folder", nargs="?", default=".", help="the project folder (default: this one; made if missing)")
    p.add_argument("--package", default="mycleanup", help="the processor's package name (default mycleanup)")


def scaffold(folder: Path, package: str) -> dict[Path, str]:
    """The files ``acksim init`` writes into ``folder`` for ``package``: {path: text}
    (``.gitignore`` not among them). Raises ``UsageError`` for a package name that is not a
    Python identifier."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", package) or keyword.iskeyword(package):
        raise UsageError(f"--package: must be a lowercase Python identifier such as mycleanup, got {package!r}")
    return {
        folder / package / "__init__.py": "",
        folder / package / "processor.py": PROCESSOR.format(package=package),
        folder / "tests" / "test_cleanup_safety.py": TEST.format(package=package),
        folder / "scenarios" / "cleanup.toml": scenario_text(package),
        folder / ".github" / "workflows" / "acksim.yml": WORKFLOW.format(package=package),
    }


def cmd_init(args) -> int:
    """Run ``acksim init``; returns the exit code (2: a file exists already, nothing written)."""
    folder = Path(args.folder)
    files = scaffold(folder, args.package)
    there = [str(path) for path in files if path.exists()]
    if there:
        raise UsageError(f"init: {there[0]} exists already; nothing written (init never overwrites a file)")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    ignore = folder / ".gitignore"
    old = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    missing = [line for line in GITIGNORE if line not in old.splitlines()]
    if missing:
        ignore.write_text(old + ("" if not old or old.endswith("\n") else "\n") + "\n".join(missing) + "\n",
                          encoding="utf-8")
    for path in (*files, ignore):
        print(f"wrote {path}")
    print(f"next: cd {folder} && python -m pytest   (pytest installed beside acksim: pip install pytest; "
          f"then make {args.package}/processor.py your own)")
    return 0
