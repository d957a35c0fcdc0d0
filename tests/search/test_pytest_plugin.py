"""The ``acksim_check`` fixture reports what it did: examples, hazard coverage and findings in
pytest's terminal summary, ``require_coverage``, the profile's example count, a warning for a
tiny budget, and a plugin that loads without importing acksim."""

from __future__ import annotations

import subprocess
import sys

import acksim.search.check  # noqa: F401 - loaded once here: pytester's in-process runs cannot load numpy twice
import acksim.search.replay  # noqa: F401
import acksim.search.api  # noqa: F401
import acksim.report.plots.counterexample  # noqa: F401 - a finding plots its counterexample (numpy, matplotlib)


def test_the_summary_names_examples_coverage_and_findings_of_every_call(pytester):
    pytester.makepyfile(test_user="""
        from acksim.model import process
        from acksim.model.candidates import no_renewed_check

        def test_reference_is_safe(acksim_check):
            acksim_check(process, max_examples=30)

        def test_candidate_is_caught(acksim_check):
            acksim_check(no_renewed_check, max_examples=200)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*= acksim =*",
        "test_user.py::test_reference_is_safe: acksim.model.processor:process: 30 examples, hazard windows hit */11*"
        "; findings: none",
        "test_user.py::test_candidate_is_caught: acksim.model.candidates:no_renewed_check: * examples, hazard windows "
        "hit */11*; findings: no_cleanup_after_renewal",
    ])


def test_require_coverage_fails_on_a_window_never_hit(pytester):
    pytester.makepyfile(test_user="""
        from acksim.model import process

        def test_reference_covered(acksim_check):
            acksim_check(process, max_examples=3, require_coverage=True)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*acksim: hazard windows never hit in 3 examples of acksim.model.processor:process: "
                                 "*paused_worker_resumed_after_lease_moved* (require_coverage=True)*"])


def test_the_default_count_is_the_loaded_profiles_and_a_tiny_one_warns(pytester):
    pytester.makeconftest("""
        from hypothesis import settings
        settings.register_profile("tiny", max_examples=3, deadline=None)
        settings.load_profile("tiny")
    """)
    pytester.makepyfile(test_user="""
        from acksim.model import process

        def test_reference(acksim_check):
            assert acksim_check(process).examples == 3
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*AcksimBudgetWarning: acksim_check ran with max_examples=3: fewer than 20 examples*",
                                 "test_user.py::test_reference: acksim.model.processor:process: 3 examples*"])


def test_loading_the_plugin_imports_nothing_of_acksim_but_the_plugin():
    code = ("import sys, acksim.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith(('acksim.', 'hypothesis', 'simpy', 'pandas'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "['acksim.pytest_plugin']\n", r.stderr


def test_a_suite_without_the_fixture_has_no_acksim_section(pytester):
    pytester.makepyfile(test_plain="def test_nothing():\n    assert True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "= acksim =" not in result.stdout.str()


def test_a_misspelled_keyword_names_every_keyword_the_fixture_takes(acksim_check):
    import pytest

    with pytest.raises(TypeError, match=r"acksim_check: unknown keyword\(s\) \['max_exampels'\]; it takes scenario, "
                                        r"max_examples, seed, .* and the design options ack_policy"):
        acksim_check("acksim.model.processor:process", max_exampels=10)
