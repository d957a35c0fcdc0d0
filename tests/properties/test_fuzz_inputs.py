"""Fuzzing the command line with malformed and extreme scenario and sweep files.

Hypothesis writes TOML files from a small valid scenario with mutations: wrong types,
out-of-range and extreme numbers (2**64, NaN, infinities), unknown keys, deep nesting,
integers of thousands of digits, huge strings, control characters, or plain garbage. Each
goes through the real command line (in process, ``acksim.cli.main.main``; a sample as a real
subprocess at the end), and whatever the input:

- the exit code is 0, 1 or 2 (never 3, an internal error);
- for 2, stderr is exactly one line and nothing is left in ``--out`` or in the temporary
  folder (``tempfile.tempdir`` points at a folder of the test's own);
- a valid one runs within its budget (``run.max_events`` 20,000 and ``run.max_wall_s`` 5 s
  are set in every generated scenario and never mutated); an example that has not ended after
  ``HANG_S`` wall seconds is hung (pytest-timeout bounds the test too). No duration is asserted.

At least 50 examples under the ``ci`` profile, 300 under ``nightly``.
"""

import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from pydantic import BaseModel

from acksim.cli.main import main
from acksim.scenario import Scenario

NIGHTLY = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "nightly"
EXAMPLES = 300 if NIGHTLY else 50
BUDGET = {"max_events": 20_000, "max_wall_s": 5.0, "max_time_s": 20_000.0}
HANG_S = 300.0  # wall seconds: an example this long is hung (its budget stops it long before), never slow
BASE = {
    "name": "fuzz", "seed": 1,
    "workload": {"accounts": 3, "deadline_start_s": 100, "deadline_window_s": 60},
    "workers": {"count": 2},
    "stores": {"backend": "memory"},
}
SKIP = {"run", "processor", "processor_path", "plan"}  # budgets stay; no importing of arbitrary modules


def _fields() -> list[str]:
    out = []
    for name, info in Scenario.model_fields.items():
        if name in SKIP:
            continue
        ann = info.annotation
        inner = next((a for a in (ann, *getattr(ann, "__args__", ())) if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if inner is None:
            out.append(name)
        else:
            out.extend(f"{name}.{f}" for f in inner.model_fields)
    return out


FIELDS = _fields()

scalars = st.one_of(
    st.integers(), st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, 1e300, 5e-324]),
    st.booleans(),
    st.text(max_size=12),
    st.text(st.characters(max_codepoint=0x9F, categories=["Cc"]), min_size=1, max_size=4),  # control characters
    st.sampled_from(["x" * 100_000, "sqs-standard", "cron", "sqlite", "memory", "a\nb", "2026-01-01T00:00:00Z"]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
mutation = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(FIELDS), values),
    st.tuples(st.just("set"), st.sampled_from(FIELDS),  # plausible values: more runs get as far as the world
              st.one_of(st.integers(0, 5), st.floats(0.0, 100.0), st.booleans())),
    st.tuples(st.just("unknown"), st.sampled_from(["", "workload", "queue", "faults", "slo"]), values),
    st.tuples(st.just("deep"), st.integers(10, 5000)),
    st.tuples(st.just("bigint"), st.integers(4200, 6000)),
    st.tuples(st.just("garbage"), st.text(max_size=60)),
)


def _value(v) -> str:
    """``v`` as a TOML value (arrays and inline tables for lists and dicts)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + "}"


def render(data: dict, extra: list[str] = ()) -> str:
    """``data`` as TOML: top-level values, then one ``[table]`` per dict, then raw ``extra`` lines."""
    lines = [f"{json.dumps(k)} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    lines += list(extra)
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"[{json.dumps(k)}]")
            lines += [f"{json.dumps(kk)} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def scenario_text(mutations) -> str:
    data = json.loads(json.dumps(BASE))
    extra = []
    for m in mutations:
        if m[0] == "set":
            *section, key = m[1].split(".")
            (data.setdefault(section[0], {}) if section else data)[key] = m[2]
            if section and not isinstance(data[section[0]], dict):
                data[section[0]] = {}
        elif m[0] == "unknown":
            (data.setdefault(m[1], {}) if m[1] else data)["bogus_key"] = m[2]
        elif m[0] == "deep":
            extra.append("deep = " + "[" * m[1] + "]" * m[1])
        elif m[0] == "bigint":
            extra.append("big = " + "9" * m[1])
        else:
            return m[1]
    data["run"] = dict(BUDGET)
    return render(data, extra)


_counter = itertools.count()


def _run(root: Path, argv_for) -> tuple[int, str, float]:
    """Run the CLI in a fresh folder with its own temporary folder; returns (code, stderr, s)."""
    case = root / f"case{next(_counter)}"
    tmp = case / "tmp"
    tmp.mkdir(parents=True)
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    started = time.monotonic()
    try:
        code = main(argv_for(case))
    finally:
        tempfile.tempdir = saved
    return code, case, time.monotonic() - started


def _judge(code: int, case: Path, seconds: float, err: str) -> None:
    event(f"exit {code}")
    assert code in (0, 1, 2), err
    assert list((case / "tmp").iterdir()) == []
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("acksim: error: "), err
        assert not (case / "out").exists()
    assert seconds < HANG_S  # a hang bound, not a duration: a loaded machine may take many times the budget


@pytest.mark.timeout(1200)
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(st.lists(mutation, max_size=4))
def test_any_scenario_file_gets_a_verdict_or_one_line(tmp_path, capsys, mutations):
    text = scenario_text(mutations)

    def argv(case):
        (case / "s.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        return ["run", str(case / "s.toml"), "--out", str(case / "out")]

    capsys.readouterr()
    code, case, seconds = _run(tmp_path, argv)
    _judge(code, case, seconds, capsys.readouterr().err)


grid_values = st.one_of(st.lists(st.integers(1, 3), min_size=1, max_size=2, unique=True),
                        st.lists(values, max_size=3), values)
sweep_mutation = st.one_of(
    st.tuples(st.just("grid"), st.sampled_from(["workers.count", "queue.visibility_timeout_s", "seed", "queue.preset",
                                                "nope.x", "workers", *FIELDS[:: max(1, len(FIELDS) // 12)]]),
              grid_values),
    st.tuples(st.just("top"), st.sampled_from(["replications", "cost", "max_runs", "overrides", "scenario", "screening",
                                               "bogus"]),
              st.one_of(values, st.integers(-2, 3), st.sampled_from(["none", "drop_failed"]))),
    st.tuples(st.just("deep"), st.integers(10, 5000)),
    st.tuples(st.just("bigint"), st.integers(4200, 6000)),
    st.tuples(st.just("garbage"), st.text(max_size=60)),
)


def sweep_text(mutations) -> str:
    data = {"scenario": "base.toml", "replications": 1, "grid": {"workers.count": [1]}}
    extra = []
    for m in mutations:
        if m[0] == "grid":
            data["grid"][m[1]] = m[2]
            data["cost"] = m[1]
        elif m[0] == "top":
            data[m[1]] = m[2]
        elif m[0] == "deep":
            extra.append("deep = " + "[" * m[1] + "]" * m[1])
        elif m[0] == "bigint":
            extra.append("replications = " + "9" * m[1])
        else:
            return m[1]
    return render(data, extra)


@pytest.mark.timeout(1200)
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(st.lists(sweep_mutation, max_size=4))
def test_any_sweep_file_gets_a_verdict_or_one_line(tmp_path, capsys, monkeypatch, mutations):
    import acksim.capacity.executors as executors
    from acksim.capacity.sweep import run_one

    def in_process(order, _executor, _address):
        """The runs themselves in this process, one after another, in the order ``order``
        (``RunOrder``) gives: the pool has tests of its own."""
        todo = order.first()
        while todo:
            row = run_one(todo.pop(0))
            after = order.finished(row["run"], bool(row["passed"]))
            todo += [] if after is None else [after]
            yield row

    monkeypatch.setattr(executors, "_run", in_process)
    text = sweep_text(mutations)

    def argv(case):
        (case / "base.toml").write_text(render({**BASE, "run": BUDGET}))
        (case / "sweep.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        return ["sweep", str(case / "sweep.toml"), "--out", str(case / "out")]

    capsys.readouterr()
    code, case, seconds = _run(tmp_path, argv)
    _judge(code, case, seconds, capsys.readouterr().err)


SAMPLES = [
    ("run", "seed = " + "9" * 5000 + "\n"),
    ("run", "x = " + "[" * 5000 + "]" * 5000 + "\n"),
    ("run", 'name = "a\\nb"\n'),
    ("run", "[workers]\ncount = 18446744073709551616\n"),
    ("run", "[queue]\nvisibility_timeout_s = nan\n"),
    ("run", "not toml at all = = =\n"),
    ("sweep", 'scenario = "base.toml"\n[grid]\n"seed" = [1, 2]\n'),
    ("sweep", 'scenario = "base.toml"\nreplications = 2\n[grid]\n"workers.count" = '
              + str(list(range(1, 1001))) + '\n"queue.max_receive_count" = ' + str(list(range(1, 101))) + "\n"),
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("command, text", SAMPLES)
def test_a_sample_as_a_real_subprocess(tmp_path, command, text):
    (tmp_path / "base.toml").write_text(render({**BASE, "run": BUDGET}))
    (tmp_path / "f.toml").write_text(text)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    done = subprocess.run([sys.executable, "-m", "acksim.cli.main", command, "f.toml", "--out", "out"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("acksim: error: "), done.stderr
    assert not (tmp_path / "out").exists() and list((tmp_path / "tmp").iterdir()) == []
