"""Errors that say why: oneDNN's check and dispatch lines for a refused
creation travel with its dnnl.error (``.reasons``, and a summary in the
message), captured for that call and thread only, with oneDNN's verbose
output left as the user set it; dnnl.verbose scopes that output to a region.

oneDNN's verbose setting is process-wide and read once, so every
test runs its scenario in a fresh process (the CHILD prelude below) whose
standard output it reads: the order of the test suite cannot change what a
test sees.

The refusals are ones oneDNN makes for known reasons (docs/api.md, Errors):
a softmax on s32 data (no implementation takes the data type: one dispatch
line per implementation), a matmul of s8 by f32 into u8 (the descriptor
check refuses the accumulation type), a pooling with a sum post-op (a post-op
the family does not take), a graph MatMul with mismatched shapes (compile)
and with s8 input (the op's schema).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import dnnl_ocl_interop as dnnl
from helpers import CHILD_ENGINE

CHILD = CHILD_ENGINE + textwrap.dedent("""
    import json, os, sys, threading
    DT, TAG = dnnl.memory.data_type, dnnl.memory.format_tag
    INFERENCE = dnnl.prop_kind.forward_inference

    def md(dims, dt=DT.f32):
        return dnnl.memory.desc(dims, dt, [TAG.a, TAG.ab, TAG.abc, TAG.abcd][len(dims) - 1])

    def softmax_s32():       # no implementation takes s32: dispatch lines
        return dnnl.softmax_forward.primitive_desc(
            engine, INFERENCE, dnnl.algorithm.softmax_accurate, md([4, 16], DT.s32),
            md([4, 16], DT.s32), 1)

    def softmax_f32():       # made, after passing implementations over
        return dnnl.softmax_forward.primitive_desc(
            engine, INFERENCE, dnnl.algorithm.softmax_accurate, md([4, 16]), md([4, 16]), 1)

    def matmul_f32():        # made, after passing implementations over (dispatch lines)
        return dnnl.matmul.primitive_desc(engine, md([4, 8]), md([8, 5]), md([4, 5]))

    def matmul_s8_f32_u8():  # the descriptor check refuses it: a check line
        return dnnl.matmul.primitive_desc(engine, md([4, 8], DT.s8), md([8, 5]),
                                          md([4, 5], DT.u8))

    def pooling_with_sum():  # a post-op pooling does not take
        ops = dnnl.post_ops()
        ops.append_sum(1.0)
        attr = dnnl.primitive_attr()
        attr.set_post_ops(ops)
        return dnnl.pooling_forward.primitive_desc(
            engine, INFERENCE, dnnl.algorithm.pooling_max, md([1, 3, 8, 8]), md([1, 3, 4, 4]),
            [2, 2], [2, 2], [0, 0], [0, 0], [0, 0], attr)

    def refused(make):
        try:
            make()
        except dnnl.error as e:
            return {"type": type(e).__name__, "message": str(e), "reasons": e.reasons}
        raise AssertionError(f"{make.__name__} was not refused")

    def mark(text):          # into the same stream as oneDNN's lines, in order
        os.write(1, (text + "\\n").encode())

    results = {}
""")


def run(scenario, env=None):
    """Runs CHILD + `scenario` in a fresh process; (its standard output
    lines, the `results` dict it wrote)."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"reasons-{os.getpid()}-{id(scenario)}.json")
    script = CHILD + textwrap.dedent(scenario) + textwrap.dedent(f"""
        with open({out!r}, "w") as f:
            json.dump(results, f)
    """)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("ONEDNN_VERBOSE", "DNNL_VERBOSE", "DNNL_OCL_INTEROP_VERBOSE_CAPTURE")}
    environment.update(env or {})
    try:
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               timeout=300, env=environment)
        assert child.returncode == 0, child.stdout + child.stderr
        with open(out) as f:
            return child.stdout.splitlines(), json.load(f)
    finally:
        if os.path.exists(out):
            os.unlink(out)


def verbose_lines(stdout):
    return [line for line in stdout if line.startswith("onednn_verbose,")]


# ------------------------------------------------------- what an error says

def test_an_unsupported_data_type_carries_each_implementations_reason():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
    """)
    e = r["e"]
    assert e["type"] == "unimplemented"
    assert e["reasons"], e
    for line in e["reasons"]:  # oneDNN's lines, one per implementation passed over
        assert line.startswith("onednn_verbose,v1,primitive,create:dispatch,softmax,gpu,softmax,")
        assert "unsupported datatype" in line and "s32" in line
    implementations = {line.split(",")[7] for line in e["reasons"]}
    assert len(implementations) == len(e["reasons"]) >= 2
    # the message says it, names them, and points to .reasons
    assert "oneDNN says: unsupported datatype (" in e["message"]
    assert all(impl in e["message"] for impl in implementations)
    assert f"({len(e['reasons'])} lines in .reasons)" in e["message"]
    assert e["message"].endswith("(status: unimplemented)")
    assert "ONEDNN_VERBOSE=all" not in e["message"]  # oneDNN's advice: answered here
    # and the user, who asked for no verbose output, saw none
    assert verbose_lines(stdout) == []


def test_a_descriptor_check_carries_its_reason():
    _, r = run("""
        results["e"] = refused(matmul_s8_f32_u8)
    """)
    e = r["e"]
    assert e["type"] == "invalid_arguments"
    assert len(e["reasons"]) == 1
    assert e["reasons"][0].startswith("onednn_verbose,v1,primitive,create:check,matmul,")
    assert "invalid datatype for accumulation" in e["message"]


def test_a_post_op_the_family_does_not_take():
    _, r = run("""
        results["e"] = refused(pooling_with_sum)
    """)
    e = r["e"]
    assert e["type"] == "unimplemented"
    assert [line.split(",")[3:6] for line in e["reasons"]] == [
        ["create:check", "pooling", "unsupported post-ops"]]
    assert "unsupported post-ops (pooling)" in e["message"]


def test_graph_compile_and_op_refusals_carry_reasons():
    _, r = run("""
        g, lt = dnnl.graph, dnnl.graph.logical_tensor
        S, f32, s8 = lt.layout_type.strided, lt.data_type.f32, lt.data_type.s8
        a, b, c = lt(0, f32, [4, 8], S), lt(1, f32, [8, 5], S), lt(2, f32, [4, 5], S)
        part = g.partition(g.op(0, g.op.kind.MatMul, [a, b], [c], "mm"), dnnl.engine.kind.gpu)
        results["compile"] = refused(lambda: part.compile([a, lt(1, f32, [7, 5], S)], [c], engine))
        s8_op = g.op(0, g.op.kind.MatMul, [lt(0, s8, [4, 8], S), b], [c], "mm")
        results["op"] = refused(lambda: g.partition(s8_op, dnnl.engine.kind.gpu))
    """)
    compile_error, op_error = r["compile"], r["op"]
    assert compile_error["type"] == "invalid_shape"
    assert any(line.startswith("onednn_verbose,v1,graph,create:check,compile,MatMul")
               and "not compatible" in line for line in compile_error["reasons"])
    assert op_error["type"] == "invalid_graph_op"
    assert any("graph,create:check,add_op,MatMul" in line and "s8" in line
               for line in op_error["reasons"])


def test_other_errors_have_no_reasons():
    e = dnnl._core._error(dnnl.status.invalid_arguments, "refused")
    assert e.reasons == []
    with pytest.raises(dnnl.invalid_arguments) as info:
        dnnl.memory.desc([2, 3], dnnl.memory.data_type.f32, [1, 2, 3])  # strides per dim
    assert info.value.reasons == []


# --------------------------------------------------- for that call only

def test_reasons_are_the_calls_own():
    _, r = run("""
        # A successful creation passes implementations over (dispatch lines,
        # collected here to show they exist), then two refusals of other
        # families: each error has its own lines only.
        with dnnl.verbose("dispatch", collect=True) as region:
            matmul_f32()
        results["passed_over"] = region.lines
        results["pooling"] = refused(pooling_with_sum)
        results["softmax"] = refused(softmax_s32)
        results["matmul"] = refused(matmul_s8_f32_u8)
    """)
    assert r["passed_over"], "the successful softmax passed no implementation over"
    assert all(",create:dispatch," in line for line in r["passed_over"])
    assert all(",pooling," in line for line in r["pooling"]["reasons"])
    assert all(",softmax," in line and "s32" in line for line in r["softmax"]["reasons"])
    # the refused matmul has its check line, not the f32 matmul's dispatch lines
    assert [line.split(",")[3] for line in r["matmul"]["reasons"]] == ["create:check"]


def test_reasons_from_threads_creating_at_once_stay_apart():
    _, r = run("""
        errors = {"softmax": [], "pooling": [], "matmul": []}
        barrier = threading.Barrier(3)

        def work(name, make, rounds=100):
            barrier.wait()
            for _ in range(rounds):
                errors[name].append(refused(make))
                matmul_f32()  # successes between, passing implementations over

        threads = [threading.Thread(target=work, args=item) for item in
                   [("softmax", softmax_s32), ("pooling", pooling_with_sum),
                    ("matmul", matmul_s8_f32_u8)]]
        for t in threads: t.start()
        for t in threads: t.join()
        results.update(errors)
    """)
    for name, marker in [("softmax", ",softmax,"), ("pooling", ",pooling,"),
                         ("matmul", ",create:check,matmul,")]:
        assert len(r[name]) == 100
        for e in r[name]:
            assert e["reasons"], (name, e)
            assert all(marker in line for line in e["reasons"]), (name, e["reasons"])
    # the softmax refusals all carry the same lines: none lost, none added
    assert len({tuple(e["reasons"]) for e in r["softmax"]}) == 1


# ------------------------------------------- verbose as the user set it

def test_the_users_own_verbose_kinds_are_still_printed():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        results["matmul"] = refused(matmul_s8_f32_u8)
    """, env={"ONEDNN_VERBOSE": "dispatch"})
    lines = verbose_lines(stdout)
    # oneDNN's header first (it prints it before its first line), then the
    # dispatch lines the user asked for, which the error carries as well
    assert lines[0].startswith("onednn_verbose,v1,info,oneDNN v")
    printed = [line for line in lines if ",create:dispatch," in line]
    assert printed == r["e"]["reasons"]
    # the check kind the user did not ask for is captured, not printed
    assert r["matmul"]["reasons"] and not any(",create:check," in line for line in lines)


def test_none_asked_for_none_printed_and_reasons_kept():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        results["state"] = dnnl._core._verbose_state()
    """, env={"ONEDNN_VERBOSE": "none"})
    assert verbose_lines(stdout) == []
    assert r["e"]["reasons"]
    assert r["state"]["answer"] == "none,error,check,dispatch"
    assert r["state"]["user_kinds"] == 0


def test_without_the_capture_errors_say_so_and_verbose_is_onednns():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        dnnl.set_verbose(2)
        mark("LEVEL2")
        dnnl.softmax_forward(softmax_f32())
        dnnl.set_verbose(0)
        mark("OFF")
        dnnl.softmax_forward(softmax_f32())
        results["state"] = dnnl._core._verbose_state()
    """, env={"DNNL_OCL_INTEROP_VERBOSE_CAPTURE": "0"})
    assert r["e"]["reasons"] == []
    assert "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=0" in r["e"]["message"]
    assert r["state"]["hooked"] is False and r["state"]["answer"] == ""
    assert verbose_lines(stdout[:stdout.index("LEVEL2")]) == []
    level2 = stdout[stdout.index("LEVEL2"):stdout.index("OFF")]
    assert any(",create:cache_" in line for line in level2)  # oneDNN prints it itself
    assert verbose_lines(stdout[stdout.index("OFF"):]) == []


def test_set_verbose_keeps_the_reasons_at_every_level():
    stdout, r = run("""
        dnnl.set_verbose(0)          # a filter: oneDNN's check and dispatch stay on
        results["after0"] = refused(softmax_s32)
        mark("LEVEL2")
        dnnl.set_verbose(2)          # dnnl_set_verbose: creation lines printed...
        dnnl.softmax_forward(softmax_f32())
        results["after2"] = refused(softmax_s32)   # ...and the dispatch kind given back
        dnnl.set_verbose(0)
        mark("OFF")
        dnnl.softmax_forward(softmax_f32())
        results["after_off"] = refused(softmax_s32)
        results["state"] = dnnl._core._verbose_state()
        results["reason_kinds"] = (dnnl._core._verbose_kinds("error")
                                   | dnnl._core._verbose_kinds("check")
                                   | dnnl._core._verbose_kinds("dispatch"))
    """)
    for when in ("after0", "after2", "after_off"):
        assert r[when]["reasons"], when
        assert all(",create:dispatch," in line for line in r[when]["reasons"])
    level2 = stdout[stdout.index("LEVEL2") + 1:stdout.index("OFF")]
    assert any(",create:cache_" in line for line in level2)     # level 2 prints creations
    # the kinds given back are for the reasons: shown to nobody who did not ask
    assert not any(",create:dispatch," in line or ",create:check," in line for line in level2)
    assert verbose_lines(stdout[:stdout.index("LEVEL2")]) == []  # level 0 printed nothing
    assert verbose_lines(stdout[stdout.index("OFF"):]) == []
    assert r["state"]["onednn_kinds"] == r["reason_kinds"]
    assert r["state"]["reasons_unavailable"] == ""


def test_a_verbose_region_prints_its_kinds_only_while_active():
    stdout, r = run("""
        refused(softmax_s32)
        mark("BEGIN")
        with dnnl.verbose("dispatch"):
            results["inside"] = refused(softmax_s32)
        mark("END")
        refused(softmax_s32)
        refused(matmul_s8_f32_u8)
    """)
    before = verbose_lines(stdout[:stdout.index("BEGIN")])
    inside = [line for line in verbose_lines(stdout[stdout.index("BEGIN"):stdout.index("END")])
              if ",info," not in line and not line.startswith("onednn_verbose,v1,info")]
    after = verbose_lines(stdout[stdout.index("END"):])
    assert before == [] and after == []
    assert inside == r["inside"]["reasons"]  # printed and carried by the error


def test_a_collecting_region_takes_this_threads_lines_only():
    stdout, r = run("""
        seen = {}
        def other():
            seen["other"] = refused(pooling_with_sum)
        with dnnl.verbose("check", "dispatch", collect=True) as region:
            t = threading.Thread(target=other); t.start(); t.join()
            refused(softmax_s32)
        results["lines"] = region.lines
        results["other"] = seen["other"]
    """)
    assert r["lines"] and all(",softmax," in line for line in r["lines"])
    assert r["other"]["reasons"]  # the other thread's error kept its own
    assert verbose_lines(stdout) == []  # collected, not printed


# A graph partition's execute runs primitives with an argument they do not
# use: oneDNN's execute-time check (on with the "check" kind the capture
# adds) prints a line per such primitive, every execute.
ATTENTION_EXECUTE = textwrap.dedent("""
    g = dnnl.graph
    lt = g.logical_tensor
    queue = cl.CommandQueue(context, device)
    stream = dnnl.ocl_interop.make_stream(engine, queue)
    tensors = [lt(i, lt.data_type.f32, [2, 16, 16], lt.layout_type.strided) for i in range(6)]
    qk = g.op(0, g.op.kind.MatMul, tensors[0:2], [tensors[3]], "qk")
    qk.set_attr(g.op.attr.transpose_b, True)
    softmax = g.op(1, g.op.kind.SoftMax, [tensors[3]], [tensors[4]], "softmax")
    softmax.set_attr(g.op.attr.axis, -1)
    graph = g.graph(dnnl.engine.kind.gpu)
    for op in (qk, softmax, g.op(2, g.op.kind.MatMul, [tensors[4], tensors[2]], [tensors[5]], "pv")):
        graph.add_op(op)
    graph.finalize()
    part = graph.get_partitions()[0]
    compiled = part.compile(part.get_input_ports(), part.get_output_ports(), engine)
    ins = [g.tensor(p, engine, dnnl.MEMORY_ALLOCATE) for p in part.get_input_ports()]
    outs = [g.tensor(p, engine, dnnl.MEMORY_ALLOCATE) for p in part.get_output_ports()]

    def execute(times=1):
        for _ in range(times):
            compiled.execute(stream, ins, outs)
        stream.wait()

    def unformatted():
        return dnnl._core._verbose_state()["lines_unformatted"]
""")


def test_execute_time_checks_nobody_wants_are_switched_off_and_back_on():
    stdout, r = run(ATTENTION_EXECUTE + textwrap.dedent("""
        def state():
            return dnnl._core._verbose_state()

        execute()
        results["first"] = state()
        execute(5)
        results["then"] = state()
        with dnnl.verbose("check", collect=True) as region:
            execute()
        results["collected"] = region.lines
        results["in_region"] = state()
        execute()
        results["after_region"] = state()
        mark("BEGIN")
        with dnnl.verbose("check"):
            execute()
        mark("END")
        execute()
        results["refused_after"] = refused(matmul_s8_f32_u8)
        results["last"] = state()
    """))
    first, then = r["first"], r["then"]
    assert first["execute_checks_switch_unavailable"] == ""
    # the first line nobody wanted was left unformatted and switched the kind
    # off in oneDNN's setting: later executes print (and format) none
    assert first["lines_unformatted"] == 1 and first["execute_checks_off"]
    assert first["execute_checks_switched_off"] == 1
    assert then["lines_unformatted"] == 1 and then["execute_checks_switched_off"] == 1
    # a region asking for "check" switches it back on while it runs: a
    # collecting one takes the lines, a showing one prints them
    per_execute = len(r["collected"])
    assert per_execute > 0 and all(",exec:check," in line and "unused primitive execution argument"
                                   in line for line in r["collected"])
    assert r["in_region"]["lines_unformatted"] == 1
    assert r["after_region"]["execute_checks_off"]  # switched off again by the next line
    assert r["after_region"]["execute_checks_switched_off"] == 2
    inside = [line for line in verbose_lines(stdout[stdout.index("BEGIN"):stdout.index("END")])
              if ",exec:check," in line]
    assert len(inside) == per_execute
    assert not any(",exec:check," in line for line in stdout[:stdout.index("BEGIN")])
    assert not any(",exec:check," in line for line in stdout[stdout.index("END"):])
    # only that kind: a refused creation still carries its check line
    assert any(",create:check," in line for line in r["refused_after"]["reasons"])
    assert r["last"]["execute_checks_switched_off"] == 3 and r["last"]["lines_unformatted"] == 3
    # what oneDNN prints for a line left unformatted is never shown (the
    # region showed oneDNN's header, and any line stashed with it)
    assert not any("error encountered while formatting" in line for line in stdout)


@pytest.mark.parametrize("level", [1, 2])
def test_execute_time_checks_given_back_with_a_level_are_switched_off_again(level):
    # A level gives oneDNN its check kind back (for the reasons), execute-time
    # half included: the first unwanted line switches that half off again,
    # with oneDNN's debuginfo byte (the level) left as oneDNN set it.
    stdout, r = run(ATTENTION_EXECUTE + textwrap.dedent(f"""
        dnnl.set_verbose({level})
        mark("LEVEL")
        execute(4)
        results["state"] = dnnl._core._verbose_state()
        results["refused"] = refused(matmul_s8_f32_u8)
    """))
    state = r["state"]
    assert state["execute_checks_off"] and state["execute_checks_switched_off"] == 1
    assert state["lines_unformatted"] == 1
    assert not any(",exec:check," in line for line in stdout)
    assert any(",create:check," in line for line in r["refused"]["reasons"])
    # oneDNN prints no debug lines at its level 1 or 2 (a debuginfo byte of 255 would)
    assert not any(",exec:debug," in line or ",create:debug," in line
                   for line in stdout[stdout.index("LEVEL"):])


def test_execute_time_check_lines_the_user_asked_for_are_printed():
    stdout, r = run(ATTENTION_EXECUTE + textwrap.dedent("""
        execute(3)
        results["unformatted"] = unformatted()
        results["state"] = dnnl._core._verbose_state()
    """), env={"ONEDNN_VERBOSE": "check"})
    assert r["unformatted"] == 0
    assert not r["state"]["execute_checks_off"] and r["state"]["execute_checks_switched_off"] == 0
    lines = [line for line in verbose_lines(stdout) if ",exec:check," in line]
    assert lines and len(lines) % 3 == 0


def test_a_profile_region_prints_executions_and_keeps_the_reasons():
    stdout, r = run("""
        import numpy as np
        queue = cl.CommandQueue(context, device)
        stream = dnnl.ocl_interop.make_stream(engine, queue)
        pd = softmax_f32()
        softmax = dnnl.softmax_forward(pd)
        mem = dnnl.memory(pd.src_desc(), engine)
        mark("BEGIN")
        with dnnl.verbose("profile_exec"):
            softmax.execute(stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
            stream.wait()
        mark("END")
        softmax.execute(stream, {dnnl.ARG_SRC: mem, dnnl.ARG_DST: mem})
        stream.wait()
        results["after"] = refused(softmax_s32)
        with dnnl.verbose("dispatch") as late:
            pass
        results["unavailable"] = late.unavailable
        results["state"] = dnnl._core._verbose_state()
    """)
    inside = stdout[stdout.index("BEGIN"):stdout.index("END")]
    assert any(line.startswith("onednn_verbose,v1,primitive,exec,gpu,softmax,") for line in inside)
    assert not any(",exec," in line for line in stdout[stdout.index("END"):])
    assert r["after"]["reasons"]  # the level's change gave the check and dispatch kinds back
    assert r["unavailable"] == []
    costly = dnnl._core._verbose_kinds("profile") | dnnl._core._verbose_kinds("warn")
    assert r["state"]["onednn_kinds"] & costly == 0  # lowered again: nothing costly left on


def test_dispatched_leaves_the_output_and_other_threads_alone():
    stdout, r = run("""
        from dnnl_ocl_interop.graph import patterns
        import numpy as np
        g = dnnl.graph
        gengine = g.ocl_interop.make_engine_with_allocator(device, context, g.allocator())
        queue = cl.CommandQueue(context, device)
        stream = dnnl.ocl_interop.make_stream(gengine, queue)
        p = patterns.mlp(gengine, 8, 16, 32)
        buffers = [dnnl.usm.allocation(context, 4 * int(np.prod(s)), device=device)
                   for s in p.input_shapes]
        mark("BEGIN")
        infos = p.dispatched(stream, *(b.ptr for b in buffers))
        mark("END")
        results["infos"] = infos
    """)
    assert len(r["infos"]) >= 1 and all(i["backend"] for i in r["infos"])
    assert verbose_lines(stdout) == []  # collected from its thread, never printed
    assert stdout.index("BEGIN") < stdout.index("END")  # fd 1 untouched


def test_verbose_kinds_are_checked():
    with pytest.raises(dnnl.invalid_arguments, match="verbose kind must be one of"):
        dnnl.verbose("dispach")
    with pytest.raises(dnnl.invalid_arguments, match="level must be 1 or 2"):
        dnnl.verbose(3)
    with pytest.raises(TypeError, match="verbose kinds must be str"):
        dnnl.verbose(1.5)
    region = dnnl.verbose("check")
    with region:
        with pytest.raises(dnnl.invalid_arguments, match="already active"):
            region.__enter__()
    with pytest.raises(dnnl.invalid_arguments, match="level must be 0, 1 or 2"):
        dnnl.set_verbose(3)
