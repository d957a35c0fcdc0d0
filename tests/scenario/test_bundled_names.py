"""Bundled scenarios by name: ``acksim run smoke`` from any folder, ``acksim scenarios`` lists
them, and a path that exists always wins over a bundled name."""

import subprocess
import sys
from pathlib import Path

import pytest

from acksim.scenario import ScenarioError, load, scenario_file
from acksim.scenarios import FOLDERS, bundled, catalogue, find


def test_a_bare_name_finds_a_scenario_an_incident_or_a_sweep():
    assert find("smoke") == find("smoke.toml") == bundled("smoke.toml")
    assert find("07-poison-job-crash-loop") == bundled("incidents/07-poison-job-crash-loop.toml")
    assert find("incidents/07-poison-job-crash-loop") == bundled("incidents/07-poison-job-crash-loop.toml")
    assert find("workers-and-timeout") == bundled("sweeps/workers-and-timeout.toml")
    assert FOLDERS == ("", "incidents", "sweeps")


@pytest.mark.parametrize("name", ["nope", "", "../smoke", "/smoke", "incidents/../smoke", "sweeps/smoke"])
def test_no_other_name_is_found(name):
    assert find(name) is None


def test_a_file_that_exists_wins_over_the_bundled_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert scenario_file("smoke") == bundled("smoke.toml")
    (tmp_path / "smoke").write_text('name = "mine"\n')
    assert scenario_file("smoke") == Path("smoke") and load("smoke").name == "mine"


def test_load_takes_a_bundled_name_and_a_missing_name_says_how_to_list_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load("smoke").name == "smoke"
    with pytest.raises(ScenarioError, match=r"^smok: scenario file not found \(nor a bundled scenario: "
                                            r"`acksim scenarios` lists them\)$"):
        load("smok")
    with pytest.raises(ScenarioError, match=r"^smok.toml: scenario file not found$"):
        load("smok.toml")


def test_the_catalogue_names_every_bundled_file_once_with_its_first_sentence():
    names = [name for name, _ in catalogue()]
    assert len(names) == len(set(names)) >= 30
    assert names[:2] == ["compare-cleanup", "game-renewal"] and names[-1] == "workers-and-timeout"
    about = dict(catalogue())
    assert about["game-renewal"] == ("The bundled default scenario: the game-renewal cleanup of the design "
                                     "documents")
    assert about["02-long-job-fixed-visibility-timeout"] == ("Incident 2a: a 2-hour job on a fixed 30-minute "
                                                             "visibility timeout, 3 workers")
    assert all(len(text) <= 100 and text for text in about.values())
    assert all(find(name) is not None for name in names)


def test_the_commands_take_names_from_any_folder(tmp_path):
    acksim = [sys.executable, "-m", "acksim"]
    listed = subprocess.run([*acksim, "scenarios"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert listed.returncode == 0 and listed.stdout.splitlines()[0].startswith("compare-cleanup  ")
    assert any(line.startswith("07-poison-job-crash-loop ") for line in listed.stdout.splitlines())
    run = subprocess.run([*acksim, "run", "smoke", "--out", "r"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.startswith("PASS: smoke seed 7: ")
    assert (tmp_path / "r" / "summary.json").is_file()


def test_a_sweep_and_a_comparison_read_their_files_by_name(tmp_path, monkeypatch):
    from acksim.capacity.sweep import load_sweep
    from acksim.scenario import read_data

    monkeypatch.chdir(tmp_path)
    spec, runs, _sweep_id = load_sweep("workers-and-timeout")
    assert runs and spec == load_sweep(bundled("sweeps/workers-and-timeout.toml"))[0]
    assert read_data(scenario_file("compare-cleanup"))["name"] == read_data(bundled("compare-cleanup.toml"))["name"]
