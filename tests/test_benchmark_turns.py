"""Both sides of a benchmark round taking turns (benchmarks/turns.py): one
side runs a segment while the other waits, in the order asked for, and a
side that says another segment, ends early or fails stops the round with
an error."""

import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import load_script

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
turns = load_script("benchmark_turns", BENCHMARKS / "turns.py")


@pytest.fixture(scope="module")
def run():
    """benchmarks/run.py as a module (loaded once: it sets up the device)."""
    return load_script("benchmark_run", BENCHMARKS / "run.py")

# A side: names each segment of argv[1] (comma-separated), spends 50 ms in
# each, and prints when each ran (CLOCK_MONOTONIC is the same clock in
# every process).
_SIDE = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, %r)
    from turns import END, turn
    ran = []
    for segment in sys.argv[1].split(","):
        turn(segment)
        start = time.monotonic()
        time.sleep(0.05)
        ran.append((segment, start, time.monotonic()))
    if sys.argv[2:] != ["no end"]:
        turn(END)
    print(json.dumps(ran))
""" % str(BENCHMARKS))


def _side(segments, *extra):
    return [sys.executable, "-c", _SIDE, ",".join(segments), *extra]


def test_sides_take_turns_in_the_order_asked():
    segments = ["a", "b", "c", "d"]
    firsts = ["left", "right", "right", "left"]
    outputs, said = turns.take_turns({"left": _side(segments), "right": _side(segments)},
                                     lambda index: firsts[index], timeout=60)
    assert said == segments
    ran = {name: json.loads(out) for name, out in outputs.items()}
    spans = sorted((start, end, name, segment) for name, runs in ran.items()
                   for segment, start, end in runs)
    # never both at once: each span ends before the next one starts
    for (_, end, *_), (start, _, *_) in zip(spans, spans[1:]):
        assert end <= start
    # segment by segment, the side asked for first, then the other
    order = [(segment, name) for _, _, name, segment in spans]
    expected = []
    for segment, first in zip(segments, firsts):
        expected += [(segment, first), (segment, "right" if first == "left" else "left")]
    assert order == expected


def test_sides_naming_different_segments_stop_the_round():
    with pytest.raises(RuntimeError, match="different segments: left 'b', right 'x'"):
        turns.take_turns({"left": _side(["a", "b"]), "right": _side(["a", "x"])},
                         lambda index: "left", timeout=60)


def test_a_side_ending_early_stops_the_round():
    with pytest.raises(RuntimeError, match=r"right side's process ended \(exit 0\) before 'end'"):
        turns.take_turns({"left": _side(["a", "b"]), "right": _side(["a", "b"], "no end")},
                         lambda index: "left", timeout=60)


def test_a_failing_side_stops_the_round():
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    with pytest.raises(RuntimeError, match=r"right side's process ended \(exit 3\)"):
        turns.take_turns({"left": _side(["a"]), "right": failing}, lambda index: "left", timeout=60)


def test_a_side_run_alone_does_not_wait():
    out = subprocess.run(_side(["a", "b"]), capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != turns.ENV})
    assert out.returncode == 0, out.stderr
    assert [segment for segment, _, _ in json.loads(out.stdout)] == ["a", "b"]


def test_the_baseline_and_run_py_name_the_same_segments_in_order(run):
    """The two sides of a full-run round must name the same segments in the
    same order (a mismatch stops the round only once the baseline is built
    and run): read from baseline.cpp's and run.py's turn() calls, in source
    order (run.py's rows are in python_rows, in order, with the thread rows'
    turns in thread_rows, where python_rows calls it; END after it)."""
    cpp = re.findall(r'\bturn\("([^"]+)"\)', (BENCHMARKS / "baseline.cpp").read_text())
    names = {"GRAPH_ROW": run.GRAPH_ROW, "POOL_ROW": run.POOL_ROW, "END": turns.END}

    def turns_in(source):
        return [literal or names[constant] for literal, constant in
                re.findall(r'^\s+turn\((?:"([^"]+)"|([A-Z_]+))\)', source, re.M)]
    before, after = inspect.getsource(run.python_rows).split("thread_rows(", 1)
    python = (turns_in(before) + turns_in(inspect.getsource(run.thread_rows)) + turns_in(after)
              + turns_in(inspect.getsource(run.print_python_side)))
    assert cpp[-1] == turns.END and len(cpp) > 5
    assert python == cpp


def test_both_sides_warm_up_for_the_same_time(run):
    """A row timed right after a turn warms up for WARM_UP_SECONDS first, on
    both sides: baseline.cpp's constant is run.py's."""
    cpp = re.findall(r"constexpr double WARM_UP_SECONDS = ([0-9.]+);", (BENCHMARKS / "baseline.cpp").read_text())
    assert cpp and float(cpp[0]) == run.WARM_UP_SECONDS > 0


def test_warm_up_runs_for_its_time_and_at_least_the_calls_asked(run, monkeypatch):
    monkeypatch.setattr(run, "WARM_UP_SECONDS", 0.05)
    log = []
    start = time.perf_counter()
    run.warm_up(lambda: log.append("call"), lambda: log.append("after"), batch=2, least=1)
    assert time.perf_counter() - start >= 0.05
    assert log[:3] == ["call", "call", "after"] and log[-1] == "after" and len(log) % 3 == 0
    monkeypatch.setattr(run, "WARM_UP_SECONDS", 0)
    for batch, least, calls in ((2, 5, 6), (2, 4, 4), (1, 1, 1), (20, 21, 40)):
        log.clear()
        run.warm_up(lambda: log.append("call"), batch=batch, least=least)
        assert len(log) == calls, (batch, least)  # whole batches, the first count >= least


def test_threaded_us_warms_up_for_its_time_or_one_untimed_round(run, monkeypatch):
    """The thread rows' untimed rounds: one with warm_up_seconds=0 (what
    thread_usage.py's usage per call counts: repeats + 1 rounds), rounds for
    WARM_UP_SECONDS by default."""
    calls = []
    run.threaded_us(2, 2, 3, lambda t: calls.append(t), warm_up_seconds=0)
    assert sorted(calls) == [0] * 4 + [1] * 4
    monkeypatch.setattr(run, "WARM_UP_SECONDS", 0.05)
    calls.clear()
    start = time.perf_counter()
    run.threaded_us(2, 2, 3, lambda t: (calls.append(t), time.sleep(0.002)))
    assert time.perf_counter() - start >= 0.05 and len(calls) > 2 * 4 and len(calls) % 2 == 0


def test_both_sides_run_the_same_thread_counts(run):
    """Each thread row is its own turn inside the loop over thread counts on
    both sides: the counts must be the same for the turns to agree."""
    loops = re.findall(r"for \(int n : \{([0-9, ]+)\}\)", (BENCHMARKS / "baseline.cpp").read_text())
    assert loops  # the thread rows' loop and the usage mode's
    assert all(tuple(int(n) for n in loop.split(",")) == tuple(run.THREAD_COUNTS) for loop in loops)


def test_a_side_that_cannot_start_leaves_nothing_behind():
    """The other side is stopped, and no pipe, process or reader thread is
    left (a driver failing at the start could not exit before)."""
    import threading
    fds, threads = len(os.listdir("/proc/self/fd")), threading.active_count()
    with pytest.raises(FileNotFoundError):
        turns.take_turns({"left": _side(["a"]), "right": ["/nonexistent/side"]},
                         lambda index: "left", timeout=60)
    assert threading.active_count() == threads
    assert len(os.listdir("/proc/self/fd")) == fds
    with pytest.raises(ValueError, match="exactly two sides"):
        turns.take_turns({"left": _side(["a"])}, lambda index: "left")
