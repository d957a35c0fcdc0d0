"""The names from before the ``acksim.`` namespace: acksim's code with a note for one release,
unless the user has a ``model`` package of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]
LOAD = ("import sys; from acksim.world.sandbox.processor_ref import CLEANUP_PARAMS, load_processor; "
        "from acksim.world.fanout import FANOUT_PARAMS; "
        "fn = load_processor(sys.argv[1], params=FANOUT_PARAMS if 'shipment' in sys.argv[1] else CLEANUP_PARAMS); "
        "print(fn.__module__, fn.__name__)")


def _load(ref: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", LOAD, ref], cwd=cwd, env=env, capture_output=True, text=True)


def test_an_old_name_loads_acksims_code_with_a_one_line_note(tmp_path):
    for ref, module in (("model.processor:process", "acksim.model.processor"),
                        ("model.candidates:naive", "acksim.model.candidates"),
                        ("model.shipment:deliver", "acksim.model.shipment")):
        r = _load(ref, tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == f"{module} {ref.split(':')[1]}\n"
        assert r.stderr == (f"acksim: note: '{ref}' is now '{module}:{ref.split(':')[1]}'; "
                            "the old name goes in the next release\n")


def test_in_acksims_own_checkout_the_model_folder_is_acksims(tmp_path):
    r = _load("model.processor:process", REPO)  # REPO/model is found, but it is acksim's own
    assert r.returncode == 0 and r.stdout == "acksim.model.processor process\n", r.stderr
    assert "is now 'acksim.model.processor:process'" in r.stderr


def test_a_model_package_of_the_users_own_is_theirs(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("")
    (tmp_path / "model" / "processor.py").write_text("def process(job, accounts, cleanup_store, outbox):\n"
                                                     "    return 'mine'\n")
    r = _load("model.processor:process", tmp_path)
    assert r.returncode == 0 and r.stdout == "model.processor process\n" and r.stderr == "", r.stderr
    # a bare folder named model (say, of ML models) without that module is not a package of theirs
    (tmp_path / "other" / "model").mkdir(parents=True)
    r = _load("model.candidates:naive", tmp_path / "other")
    assert r.returncode == 0 and r.stdout == "acksim.model.candidates naive\n"


def test_a_replay_file_records_the_new_name(tmp_path):
    from acksim.world.sandbox.processor_ref import canonical_ref

    os.chdir(tmp_path)
    try:
        assert canonical_ref("acksim.model.candidates:naive") == "acksim.model.candidates:naive"
        assert canonical_ref("procs/x.py:process") == f"{tmp_path / 'procs' / 'x.py'}:process"
    finally:
        os.chdir(REPO)
