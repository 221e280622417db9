"""The examples run as users run them: each in a fresh process.

A fresh process also covers OpenCL's start-up order: pyopencl (with its own
ICD loader) makes the first OpenCL call and oneDNN's loader comes second.
"""

import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def run_example(name, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *map(str, args)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.timeout(600)
def test_demo():
    out = run_example("demo.py")
    assert "same cl_mem: True" in out
    assert "data handle matches: True" in out
    assert out.rstrip().endswith("demo:    OK")


@pytest.mark.timeout(600)
def test_pipeline():
    out = run_example("pipeline.py")
    assert out.rstrip().endswith("pipeline: OK")


@pytest.mark.timeout(600)
def test_graph_allocator():
    out = run_example("graph_allocator.py")
    assert "allocations" in out
    assert out.rstrip().endswith("graph_allocator: OK")


@pytest.mark.timeout(600)
def test_attention():
    out = run_example("attention.py")
    assert "one fused partition" in out
    assert "dispatched: sdp partition" in out
    assert "warm" in out and "cold" in out
    assert out.rstrip().endswith("attention: OK")


@pytest.mark.timeout(600)
def test_lstm_inference():
    out = run_example("lstm_inference.py")
    assert "largest difference from NumPy" in out
    assert out.rstrip().endswith("lstm_inference: OK")


@pytest.mark.timeout(600)
def test_cnn_training():
    out = run_example("cnn_training.py")
    assert "gradients:    largest relative difference from NumPy" in out
    assert out.rstrip().endswith("cnn_training: OK")


@pytest.mark.timeout(600)
def test_ops_replay():
    out = run_example("ops_replay.py")
    assert "3 launches>, 6 arrays by reference" in out
    assert "replayed: 3 new inputs" in out and "results kept on 2 queues" in out
    assert "refused:  inputs[0] (x): shape (32, 64) where the capture had (16, 64)" in out
    assert out.rstrip().endswith("ops_replay: OK")


@pytest.mark.timeout(600)
def test_ops_mlp(tmp_path):
    trace = tmp_path / "trace.json"
    out = run_example("ops_mlp.py", trace)
    assert "largest relative difference from NumPy" in out
    assert "calls served from the cache" in out
    assert "dnnl.profiling: 9 executes on 1 queue" in out
    assert all(f"\n{name} " in out for name in ("matmul", "layer_normalization"))
    assert out.rstrip().endswith("ops_mlp:  OK")
    import json
    events = json.loads(trace.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == 9 and all(e["dur"] > 0 and "ts" in e for e in complete)


def test_profile_network(tmp_path):
    trace = tmp_path / "trace.json"
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "profile_network.py"), str(trace)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    out = result.stdout
    assert out.startswith("dnnl.profiling: 15 executes on 1 queue")
    assert all(f"\n{name} " in out for name in ("convolution", "pooling", "inner_product"))
    assert out.rstrip().endswith("profile_network: OK")
    import json
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 15
