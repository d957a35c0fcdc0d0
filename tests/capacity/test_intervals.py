"""The Student t quantile and the clipped t-interval, without SciPy at run time."""

import subprocess
import sys

import pytest

from acksim.capacity.intervals import t_interval, t_quantile
from acksim.capacity.queueing import batch_means_half_width


def test_the_t_quantile_matches_scipy_to_4_significant_digits_over_every_df_a_sweep_uses():
    stats = pytest.importorskip("scipy.stats")
    for df in range(1, 1000):  # replications 2 .. 1000; batch means use 19
        assert t_quantile(0.975, df) == pytest.approx(float(stats.t.ppf(0.975, df)), rel=5e-5), df
    for p in (0.6, 0.9, 0.995, 0.025):
        assert t_quantile(p, 7) == pytest.approx(float(stats.t.ppf(p, 7)), rel=5e-5)


def test_the_t_quantile_gives_the_published_values():
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(0.975, 19) == pytest.approx(2.0930, abs=1e-4)
    assert t_quantile(0.975, 120) == pytest.approx(1.9799, abs=1e-4)


@pytest.mark.parametrize("p, df, message", [(0.975, 0, "df: degrees of freedom must be an integer >= 1, got 0"),
                                            (0.975, 2.5, "got 2.5"), (1.0, 3, "p: a probability strictly between")])
def test_the_t_quantile_refuses_bad_arguments(p, df, message):
    with pytest.raises(ValueError, match=message):
        t_quantile(p, df)


def test_the_interval_is_clipped_at_zero_and_says_so():
    mean, low, high, clipped = t_interval([0.0, 0.0, 3.0])
    assert (mean, low, clipped) == (1.0, 0.0, True)
    assert high == pytest.approx(1.0 + 4.302653 * 3 ** 0.5 / 3 ** 0.5)  # sd √3, n 3
    assert t_interval([5.0, 6.0, 7.0]) == pytest.approx((6.0, 6.0 - 4.302653 / 3 ** 0.5, 6.0 + 4.302653 / 3 ** 0.5, False))
    assert t_interval([2.0]) == (2.0, 2.0, 2.0, False)
    assert t_interval([0.0, 0.0, 3.0], floor=None)[1] < 0


def test_batch_means_use_the_t_quantile_of_batches_minus_one():
    samples = [float(i % 7) for i in range(200)]  # 20 batches of 10
    means = [sum(samples[i * 10:(i + 1) * 10]) / 10 for i in range(20)]
    m = sum(means) / 20
    sd = (sum((x - m) ** 2 for x in means) / 19) ** 0.5
    assert batch_means_half_width(samples) == pytest.approx(2.093024 * sd / 20 ** 0.5)
    with pytest.raises(ValueError, match="batches: need at least 2 batches, got 1"):
        batch_means_half_width(samples, batches=1)


def test_sweep_reports_and_batch_means_run_without_scipy():
    code = ("import sys; sys.modules['scipy'] = None\n"
            "import pandas as pd\n"
            "from acksim.capacity.sweep_report import point_summary\n"
            "from acksim.capacity.queueing import batch_means_half_width\n"
            "rows = pd.DataFrame({'run': [0, 1], 'point': [0, 0], 'passed': [True, True], 'end_to_end_p50_s': [1.0, 3.0]})\n"
            "print(round(point_summary(rows, [])['end_to_end_p50_s_ci_high'][0], 4), "
            "round(batch_means_half_width([float(i % 7) for i in range(200)]), 4))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["14.7062", "0.1719"]
