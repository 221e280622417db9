"""The benchmark's verdicts (benchmarks/run.py): a median with a bootstrap
interval over rounds, judged against the goal as meets, misses or
inconclusive."""

from pathlib import Path

import pytest

from helpers import load_script

run = load_script("benchmark_run", Path(__file__).resolve().parent.parent / "benchmarks" / "run.py")


def test_interval_contains_the_median_and_narrows_with_agreement():
    median, low, high = run.bootstrap_interval([1.0, 1.1, 0.9, 1.05, 0.95])
    assert low <= median <= high and median == pytest.approx(1.0)
    tight = run.bootstrap_interval([1.0] * 9)
    assert tight == (1.0, 1.0, 1.0)
    spread = run.bootstrap_interval([0.5, 1.0, 1.5, 0.2, 1.8])
    assert spread[2] - spread[1] > high - low


def test_interval_is_reproducible():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    assert run.bootstrap_interval(values) == run.bootstrap_interval(values)


@pytest.mark.parametrize("low, high, expected", [
    (0.2, 1.4, "meets"), (1.6, 2.0, "misses"), (1.2, 1.8, "inconclusive"), (1.5, 1.5, "meets"),
])
def test_verdict(low, high, expected):
    assert run.verdict(low, high, 1.5) == expected


def test_plot_draws_each_judged_row(tmp_path):
    row = {"name": "execute(in-order)", "ratio": 1.4, "ratio_ci95": [1.2, 1.6], "cpp_us": 3.0,
           "verdict": "meets", "goal_limit": ["overhead", 1.5]}
    report = {"date": "2026-11-23", "onednn_version": "3.13.1", "rounds": 5,
              "rows": [row, {**row, "name": "large matmul", "verdict": "misses", "goal_limit": ["ratio", 1.02]},
                       {**row, "name": "opencl kernel enqueue", "verdict": None, "goal_limit": None}]}
    path = tmp_path / "bench.png"
    run.plot(report, str(path))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
