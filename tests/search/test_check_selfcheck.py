"""Every finding is replayed in a fresh process before ``check`` reports it."""

import textwrap
from pathlib import Path

from acksim.cli.main import main
from acksim.scenario import load
from acksim.search.selfcheck import Replayed, differences, replay_in_fresh_process

SEEN_SET = textwrap.dedent('''
    from acksim.model.job import reminder_event_key

    SEEN = set()  # deduplication in the process's memory instead of the store


    def process(job, accounts, cleanup_store, outbox):
        key = (job.account_id, job.cleanup_version)
        if key in SEEN:
            return
        account = accounts.get(job.account_id)
        if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
            return
        cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
        outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                        account_id=job.account_id, cleanup_version=job.cleanup_version)
        SEEN.add(key)
''')


CACHE = textwrap.dedent('''
    from acksim.model.job import reminder_event_key

    CACHE = {}  # account id -> account, per process: stale after a renewal


    def process(job, accounts, cleanup_store, outbox):
        account = CACHE.get(job.account_id)
        if account is None:
            account = CACHE[job.account_id] = accounts.get(job.account_id)
        if account is None or account.cleanup_version != job.cleanup_version or account.renewed:
            return
        if cleanup_store.was_applied(job.account_id, job.cleanup_version):
            return
        cleanup_store.apply_once(account_id=job.account_id, cleanup_version=job.cleanup_version)
        outbox.add_once(event_key=reminder_event_key(job.account_id, job.cleanup_version),
                        account_id=job.account_id, cleanup_version=job.cleanup_version)
''')


def check(tmp_path, source, *flags):
    (tmp_path / "proc.py").write_text(source)
    out = tmp_path / "c"
    rc = main(["check", "--processor", f"{tmp_path / 'proc.py'}:process", "--max-examples", "300",
               "--no-database", "--out", str(out), *flags])
    return rc, out


def deliveries(replay: Path) -> int:
    """How many deliveries the replay's run made (its report's events, replayed here)."""
    from acksim.world.core import simulate

    return sum(r.kind == "delivered" for r in simulate(load(str(replay))).history)


def test_a_processor_deduplicating_in_memory_is_found_and_its_finding_reproduces(tmp_path, capsys):
    rc, out = check(tmp_path, SEEN_SET, "--unique-markers", "off", "--unique-outbox-keys", "off")
    text = capsys.readouterr().out
    assert rc == 1 and "FOUND at_most_once_effect" in text and "flaky finding" not in text
    replay = next(out.glob("proc.process-*at_most_once_effect.toml"))
    scenario = load(str(replay))
    got = replay_in_fresh_process(replay)
    assert got.error == "" and got.failures[0] == "at_most_once_effect"
    assert got.history_sha256 == scenario.expect.history_sha256
    # each worker process starts with an empty SEEN: applying twice takes two deliveries
    assert deliveries(replay) >= 2


def test_a_per_process_account_cache_is_found_and_its_finding_reproduces(tmp_path, capsys):
    rc, out = check(tmp_path, CACHE)
    text = capsys.readouterr().out
    assert rc == 1 and "FOUND no_cleanup_after_renewal" in text and "flaky finding" not in text
    replays = sorted(out.glob("*.toml"))
    assert replays
    for replay in replays:
        got = replay_in_fresh_process(replay)
        assert got.error == "" and got.history_sha256 == load(str(replay)).expect.history_sha256


def test_a_difference_is_named_and_a_dead_child_is_an_error(tmp_path):
    assert differences(("at_most_once_effect",), "a" * 64, Replayed(("at_most_once_effect",), "a" * 64)) == []
    assert differences(("at_most_once_effect",), "a" * 64, Replayed((), "b" * 64)) == [
        "findings none instead of ['at_most_once_effect']", f"history sha256 {'b' * 12}... instead of {'a' * 12}..."]
    missing = replay_in_fresh_process(tmp_path / "no-such-file.toml")
    assert missing.error.startswith("the fresh process exited with code 1")


def test_a_finding_whose_replay_differs_is_flaky_and_not_reported_as_a_counterexample():
    from dataclasses import replace

    from acksim.search.check import CheckReport, run_example
    from acksim.search.findings import render_flaky
    from acksim.search.replay import confirm_findings

    corpus = Path(__file__).parent.parent / "corpus"
    scenario = load(str(corpus / "acksim.model.candidates.no_renewed_check-no_cleanup_after_renewal.toml"))
    result = run_example(scenario, scenario.processor)
    report = CheckReport(findings={"no_cleanup_after_renewal": (scenario, result)})
    confirmed, flaky = confirm_findings(report, scenario.processor, None)
    assert list(confirmed.findings) == ["no_cleanup_after_renewal"] and flaky == {}
    seen_otherwise = replace(result, history=result.history[:-1])  # what a leaky search might have seen
    report = CheckReport(findings={"no_cleanup_after_renewal": (scenario, seen_otherwise)})
    confirmed, flaky = confirm_findings(report, scenario.processor, None)
    assert confirmed.findings == {} and list(flaky) == ["no_cleanup_after_renewal"]
    text = "\n".join(render_flaky(flaky))
    assert text.startswith("\nflaky finding no_cleanup_after_renewal: the search saw no_cleanup_after_renewal, "
                           "but its replay in a fresh process gave history sha256 ")
    assert text.split("\n")[1].endswith("; not a counterexample")
