"""Every finding checked before it is reported: its replay file, run in a fresh process.

A shrunk counterexample is only worth printing if ``acksim run`` on its replay file shows the
same thing. The search ran thousands of examples in one interpreter; anything that leaked
between them (state the processor keeps outside its process images, a file it wrote, a
thread it left running, a clock read the harness does not virtualise) could make a finding
that no fresh process reproduces. ``confirm`` runs the replay file in a new Python process
(``python -c ...`` in the same folder, importing nothing from the parent) with the same
judging as the search (``acksim.search.check.run_example``) and compares the findings and the
history's SHA-256 with what the search saw. A difference makes the finding *flaky*: it is
reported with what differed, never as a minimal counterexample.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FRESH_PROCESS_TIMEOUT_S = 600.0  # wall seconds for one replay (a hung processor costs its step budget)
_CHILD = "from acksim.search.selfcheck import child_main; child_main()"


@dataclass(frozen=True)
class Replayed:
    """What a fresh process saw running a replay file: ``failures`` (finding names, first
    broken first, as ``ExampleResult.failures``), ``history_sha256``
    (``acksim.search.replay.history_digest``), and ``error``: one line when the process itself
    failed (crashed, timed out, printed no result), else ""."""

    failures: tuple[str, ...]
    history_sha256: str
    error: str = ""


def replay_in_fresh_process(path: Path, timeout_s: float = FRESH_PROCESS_TIMEOUT_S) -> Replayed:
    """Run the replay file ``path`` in a new interpreter (``sys.executable``, the current
    folder) and judge it as ``check`` does. Never raises for what the child does: a crash, a
    signal, a timeout (``timeout_s`` wall seconds) or unreadable output is ``Replayed.error``."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True,
                              timeout=timeout_s, errors="replace")
    except subprocess.TimeoutExpired:
        return Replayed((), "", f"the fresh process ran over {timeout_s:g} wall seconds")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [""])[-1][:300]
        return Replayed((), "", f"the fresh process exited with code {done.returncode}: {tail}")
    data = json.loads(lines[-1])
    return Replayed(tuple(data["failures"]), data["history_sha256"])


def differences(expected_failures, expected_sha256: str, got: Replayed) -> list[str]:
    """What differs between the search's example and its replay in a fresh process, as
    phrases (empty: it reproduced, the same findings and the same history)."""
    if got.error:
        return [got.error]
    out = []
    if tuple(got.failures) != tuple(expected_failures):
        out.append(f"findings {list(got.failures) or 'none'} instead of {list(expected_failures)}")
    if got.history_sha256 != expected_sha256:
        out.append(f"history sha256 {got.history_sha256[:12]}... instead of {expected_sha256[:12]}...")
    return out


def child_main() -> None:
    """The fresh process: load ``sys.argv[1]`` (a replay file), run and judge it, print one
    JSON line ``{"failures": [...], "history_sha256": "..."}``."""
    from acksim.interrupts import handled
    from acksim.scenario import load
    from acksim.search.check import run_example
    from acksim.history import history_digest

    scenario = load(sys.argv[1])
    with handled():  # as in the search: a KeyboardInterrupt the processor raises is its own result
        result = run_example(scenario, scenario.processor)
    print(json.dumps({"failures": list(result.failures), "history_sha256": history_digest(result.history)}))
