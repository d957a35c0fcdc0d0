"""Each simulated worker start runs a fresh copy of the user's code, as a new process would."""

import textwrap

from acksim.scenario import parse
from acksim.world.core import World, simulate
from helpers.tinyworld import tiny_dict

SEEN_PROCESSOR = textwrap.dedent('''
    from acksim.model.job import reminder_event_key

    SEEN = set()  # per process: dies with the worker


    def process(job, accounts, cleanup_store, outbox):
        key = (job.account_id, job.cleanup_version)
        if key in SEEN:
            return
        SEEN.add(key)
        cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
        outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                        account_id=job.account_id, cleanup_version=job.cleanup_version)
''')


def crash_after_commit():
    """One worker, unique keys off, a crash between the commit and the ack of delivery 1."""
    return parse(tiny_dict(stores={"unique_markers": False, "unique_outbox_keys": False},
                           faults={"crashes": [{"delivery": 1, "phase": "after_commit"}]}))


def effects(history):
    return [(r.time, r.actor, r.kind) for r in history if r.kind == "cleanup_applied"]


def test_a_restarted_worker_forgets_its_module_state_and_applies_the_redelivered_job_again(tmp_path):
    (tmp_path / "seen.py").write_text(SEEN_PROCESSOR)
    ref = f"{tmp_path / 'seen.py'}:process"
    world = World(crash_after_commit(), ref)
    try:
        outcome = world.run()
    finally:
        world.close()
    # the crash at 103 s (two 1 s store calls and the commit after the deadline); down 30 s; visibility 60 s
    assert [r.kind for r in outcome.history if r.kind in ("crashed", "restarted")] == ["crashed", "restarted"]
    assert effects(outcome.history) == [(103.0, "worker-1", "cleanup_applied"),
                                        (163.0, "worker-1", "cleanup_applied")]
    assert world.code.imaged and world.code.images == 2  # the first start and the restart


def test_the_same_function_handed_over_as_a_callable_is_shared_and_hides_the_bug(tmp_path):
    (tmp_path / "seen.py").write_text(SEEN_PROCESSOR)
    from acksim.world.sandbox.processor_ref import load_processor

    fn = load_processor(f"{tmp_path / 'seen.py'}:process")
    outcome = simulate(crash_after_commit(), fn)
    assert effects(outcome.history) == [(103.0, "worker-1", "cleanup_applied")]


def test_acksims_own_processor_is_shared_not_imaged():
    world = World(parse(tiny_dict()))
    try:
        world.run()
    finally:
        world.close()
    assert not world.code.imaged and world.code.images == 0


def test_two_workers_have_two_images_and_a_user_module_imported_by_the_processor_is_per_worker(tmp_path):
    pkg = tmp_path / "teamcode"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "counter.py").write_text("ACCOUNTS = set()\n")
    (pkg / "proc.py").write_text(textwrap.dedent('''
        from teamcode import counter
        from acksim.model.processor import process as reference


        def process(job, accounts, cleanup_store, outbox):
            counter.ACCOUNTS.add(job.account_id)  # a conflict retries the same job in place
            if len(counter.ACCOUNTS) > 1:
                raise RuntimeError(f"this process ran jobs of {sorted(counter.ACCOUNTS)}")
            reference(job, accounts, cleanup_store, outbox)
    '''))
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        sc = parse(tiny_dict(workload={"accounts": 2, "deadline_window_s": 1, "deadline_granularity_s": 1},
                             workers={"count": 2}))
        world = World(sc, "teamcode.proc:process")
        try:
            outcome = world.run()
        finally:
            world.close()
    finally:
        sys.path.remove(str(tmp_path))
    assert world.code.images == 2
    assert not world.processor_errors  # each worker's own counter saw one account
    assert sorted(r.actor for r in outcome.history if r.kind == "cleanup_applied") == ["worker-1", "worker-2"]
    assert sys.modules["teamcode.counter"].ACCOUNTS == set()  # the harness's own copy was never run
