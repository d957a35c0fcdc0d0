"""``acksim check --executor dask``: the searches of ``--jobs N`` as tasks on a Dask cluster,
merged into the report the local processes give."""

import distributed

from acksim.cli.main import main
from acksim.search.check import base_scenario
from acksim.search.parallel import run_checks, run_checks_on_dask

REF = "acksim.model.candidates:no_renewed_check"


def test_a_local_cluster_gives_the_findings_of_the_local_processes(tmp_path, capsys):
    base = base_scenario()
    local = run_checks(REF, base, jobs=2, max_examples=60, seed=3)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_checks_on_dask(REF, base, address=cluster.scheduler_address, jobs=2, max_examples=60, seed=3)
        assert main(["check", "--candidate", "no-renewed-check", "--executor", "dask", "--address",
                     cluster.scheduler_address, "--max-examples", "60", "--seed", "3", "--no-database",
                     "--out", str(tmp_path / "c")]) == 1  # one search per worker thread: 2
    assert list(remote.findings) == list(local.findings) == ["no_cleanup_after_renewal"]
    (s1, r1), (s2, r2) = local.findings["no_cleanup_after_renewal"], remote.findings["no_cleanup_after_renewal"]
    assert s1 == s2 and r1.history == r2.history
    assert remote.examples == local.examples and dict(remote.coverage) == dict(local.coverage)
    assert remote.first == local.first.__class__(local.first.kind, local.first.example, remote.first.seconds)
    out = capsys.readouterr().out
    assert "on the Dask cluster" in out and "FOUND no_cleanup_after_renewal" in out


def test_the_dask_executor_needs_an_address(tmp_path, capsys):
    assert main(["check", "--executor", "dask", "--out", str(tmp_path / "c")]) == 2
    assert "--address: the dask executor needs a scheduler address" in capsys.readouterr().err
