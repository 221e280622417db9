"""Errors that say why, without touching libdnnl by default: a refused
creation is re-run once with standard output captured when oneDNN will print
its check and dispatch lines (the user's ONEDNN_VERBOSE asked for them, or
the opt-in interposer, DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1, switches them on
for the re-run), and the lines travel with its dnnl.error (``.reasons``, and
a summary in the message); otherwise the message says how to get them.
dnnl.verbose scopes oneDNN's output to a region.

oneDNN's verbose setting is process-wide and read once, so every
test runs its scenario in a fresh process (the CHILD prelude below) whose
standard output it reads: the order of the test suite cannot change what a
test sees. ``docs/api.md`` (Verbose output) has the design.

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


INTERPOSER = {"DNNL_OCL_INTEROP_VERBOSE_CAPTURE": "1"}


def run(scenario, env=None, prelude=None):
    """Runs `prelude` (CHILD by default) + `scenario` in a fresh process with
    no verbose setting but `env`; (its standard output lines, the `results`
    dict it wrote)."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"reasons-{os.getpid()}-{id(scenario)}.json")
    script = (CHILD if prelude is None else prelude) + textwrap.dedent(scenario) + textwrap.dedent(f"""
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


# --------------------------------------------------- by default: nothing

def test_by_default_nothing_is_captured_and_the_message_says_how():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        softmax_f32()
        results["state"] = dnnl._core._verbose_state()
    """)
    e, state = r["e"], r["state"]
    assert e["type"] == "unimplemented" and e["reasons"] == []
    assert "ONEDNN_VERBOSE=check,dispatch prints them" in e["message"]
    assert "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1 puts them in .reasons" in e["message"]
    assert e["message"].endswith("(status: unimplemented)")
    assert state["interposer_asked"] is False and state["interposer"] is False
    assert state["reruns"] == 0 and state["collectors"] == 0
    assert state["onednn_kinds"] == dnnl._core._verbose_kinds("error")  # oneDNN's own default
    assert verbose_lines(stdout) == []


# What libdnnl's relocations and oneDNN's verbose setting hold, read from the
# process's memory: the GOT entries of the functions the binding once routed
# through itself, and the 8 bytes of dnnl::impl::verbose (found in libdnnl's
# symbol table, as the interposer finds it).
MEMORY_READER = textwrap.dedent("""
    import ctypes, struct

    def elf_tables(path):
        data = open(path, "rb").read()
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        def symbols(index):
            _, _, _, _, offset, size, link, _, _, entsize = sections[index]
            strings = sections[link][4]
            for k in range(size // entsize):
                name, info, _, _, value, sz = struct.unpack_from("<IBBHQQ", data, offset + k * entsize)
                end = data.index(b"\\0", strings + name)
                yield data[strings + name:end].decode(), value, sz
        dynsym = next(i for i, s in enumerate(sections) if s[1] == 11)   # SHT_DYNSYM
        names = [n for n, _, _ in symbols(dynsym)]
        slots = {}
        for s in sections:
            if s[1] == 4 and s[6] == dynsym:                                 # SHT_RELA
                for k in range(s[5] // 24):
                    offset, info, _ = struct.unpack_from("<QQq", data, s[4] + k * 24)
                    if info & 0xffffffff in (6, 7):                         # GLOB_DAT, JUMP_SLOT
                        slots.setdefault(names[info >> 32], []).append(offset)
        setting = None
        for i, s in enumerate(sections):
            if s[1] == 2:                                                   # SHT_SYMTAB
                for name, value, size in symbols(i):
                    if name == "_ZN4dnnl4implL7verboseE" and size == 8:
                        setting = value
        return slots, setting

    def load_base(path):
        import os
        real = os.path.realpath(path)
        for line in open("/proc/self/maps"):
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)

    WATCHED = ("printf", "__printf_chk", "__snprintf_chk", "getenv", "vprintf", "fflush")

    def snapshot(path):
        slots, setting = elf_tables(path)
        base = load_base(path)
        got = {name: [ctypes.c_uint64.from_address(base + o).value for o in slots.get(name, [])]
               for name in WATCHED}
        kinds, initialized = struct.unpack("<I?", ctypes.string_at(base + setting, 5))
        return {"got": got, "setting": [kinds, initialized]}
""")


def test_nothing_is_written_into_libdnnl_by_default():
    """With no environment set, importing and using the package (an engine,
    a stream, creations made and refused, a graph partition compiled and
    executed) leaves libdnnl's GOT entries as the dynamic linker wrote them
    and oneDNN's verbose setting as oneDNN itself set it."""
    probe = subprocess.run([sys.executable, "-c", "import dnnl_ocl_interop as d; print(d._core.library_path())"],
                           capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k not in (
                               "ONEDNN_VERBOSE", "DNNL_VERBOSE", "DNNL_OCL_INTEROP_VERBOSE_CAPTURE")})
    assert probe.returncode == 0, probe.stderr
    library = probe.stdout.strip()
    prelude = MEMORY_READER + textwrap.dedent(f"""
        LIBRARY = {library!r}
        libdnnl = ctypes.CDLL(LIBRARY)               # loaded before the package, as it will be
        libc = ctypes.CDLL(None)
        resolved = {{n: ctypes.cast(getattr(libc, n), ctypes.c_void_p).value for n in WATCHED}}
        before = snapshot(LIBRARY)
    """) + CHILD
    _, r = run(textwrap.dedent("""
        refused(softmax_s32)
        refused(matmul_s8_f32_u8)
        refused(pooling_with_sum)
        dnnl.softmax_forward(softmax_f32())
    """) + ATTENTION_EXECUTE + textwrap.dedent("""
        execute(3)
        results["before"] = before
        results["after"] = snapshot(LIBRARY)
        results["resolved"] = resolved
        results["state"] = dnnl._core._verbose_state()
    """), prelude=prelude)
    before, after = r["before"], r["after"]
    watched = [name for name, slots in before["got"].items() if slots]
    # what the binding once patched is there (a fortified libdnnl calls __printf_chk)
    assert "getenv" in watched and {"printf", "__printf_chk"} & set(watched), before
    for name in watched:
        for was, now in zip(before["got"][name], after["got"][name]):
            # as loaded, or bound lazily by the dynamic linker to the C library's function
            assert now in (was, r["resolved"][name]), (name, hex(was), hex(now))
    # oneDNN's setting: as oneDNN sets it from an empty environment (error
    # lines only), or not read yet
    assert before["setting"] == [0, False]
    assert after["setting"] in ([0, False], [dnnl._core._verbose_kinds("error"), True])
    assert r["state"]["interposer"] is False and r["state"]["reruns"] == 0


# ------------------------------------------------------- what an error says

def test_an_unsupported_data_type_carries_each_implementations_reason():
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        results["state"] = dnnl._core._verbose_state()
    """, env=INTERPOSER)
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
    # the user, who asked for no verbose output, saw none; oneDNN's setting
    # is back as oneDNN set it (error lines only)
    assert verbose_lines(stdout) == []
    assert r["state"]["interposer"] is True and r["state"]["reruns"] == 1
    assert r["state"]["onednn_kinds"] & ~dnnl._core._verbose_kinds("error") == 0
    assert r["state"]["collectors"] == 0


def test_a_descriptor_check_carries_its_reason():
    _, r = run("""
        results["e"] = refused(matmul_s8_f32_u8)
    """, env=INTERPOSER)
    e = r["e"]
    assert e["type"] == "invalid_arguments"
    assert len(e["reasons"]) == 1
    assert e["reasons"][0].startswith("onednn_verbose,v1,primitive,create:check,matmul,")
    assert "invalid datatype for accumulation" in e["message"]


def test_a_post_op_the_family_does_not_take():
    _, r = run("""
        results["e"] = refused(pooling_with_sum)
    """, env=INTERPOSER)
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
    """, env=INTERPOSER)
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


def test_reasons_without_the_interposer_when_the_user_asks_onednn_for_them():
    # ONEDNN_VERBOSE's own check and dispatch kinds: oneDNN prints the lines
    # (once: the re-run's repeats are taken, not shown), the error carries them
    stdout, r = run("""
        results["e"] = refused(softmax_s32)
        results["matmul"] = refused(matmul_s8_f32_u8)
        results["state"] = dnnl._core._verbose_state()
    """, env={"ONEDNN_VERBOSE": "check,dispatch"})
    assert r["state"]["interposer"] is False and r["state"]["reruns"] == 2
    printed = [line for line in verbose_lines(stdout) if ",create:" in line]
    assert r["e"]["reasons"] and r["matmul"]["reasons"]
    assert printed == r["e"]["reasons"] + r["matmul"]["reasons"]


# --------------------------------------------------- for that call only

def test_reasons_are_the_calls_own():
    _, r = run("""
        # A successful creation passes implementations over (dispatch lines,
        # collected here to show they exist), then three refusals of other
        # families: each error has its own lines only.
        with dnnl.verbose("dispatch", collect=True) as region:
            matmul_f32()
        results["passed_over"] = region.lines
        results["pooling"] = refused(pooling_with_sum)
        results["softmax"] = refused(softmax_s32)
        results["matmul"] = refused(matmul_s8_f32_u8)
    """, env=INTERPOSER)
    assert r["passed_over"], "the successful matmul passed no implementation over"
    assert all(",create:dispatch," in line for line in r["passed_over"])
    assert all(",pooling," in line for line in r["pooling"]["reasons"])
    assert all(",softmax," in line and "s32" in line for line in r["softmax"]["reasons"])
    # the refused matmul has its check line, not the f32 matmul's dispatch lines
    assert [line.split(",")[3] for line in r["matmul"]["reasons"]] == ["create:check"]


@pytest.mark.parametrize("env", [INTERPOSER, {"ONEDNN_VERBOSE": "check,dispatch"}],
                         ids=["interposer", "user-setting"])
def test_reasons_from_threads_creating_at_once_stay_apart(env):
    _, r = run("""
        errors = {"softmax": [], "pooling": [], "matmul": []}
        barrier = threading.Barrier(3)

        def work(name, make, rounds=50):
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
    """, env=env)
    for name, marker in [("softmax", ",softmax,"), ("pooling", ",pooling,"),
                         ("matmul", ",create:check,matmul,")]:
        assert len(r[name]) == 50
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
    """, env={"ONEDNN_VERBOSE": "dispatch", **INTERPOSER})
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
    """, env={"ONEDNN_VERBOSE": "none", **INTERPOSER})
    assert verbose_lines(stdout) == []
    assert r["e"]["reasons"]
    assert r["state"]["user_kinds"] == 0 and r["state"]["onednn_kinds"] == 0  # restored


def test_set_verbose_is_onednns_own():
    # dnnl_set_verbose: level 2 prints creations (oneDNN itself), 0 nothing
    stdout, r = run("""
        dnnl.set_verbose(2)
        mark("LEVEL2")
        dnnl.softmax_forward(softmax_f32())
        dnnl.set_verbose(0)
        mark("OFF")
        dnnl.softmax_forward(softmax_f32())
        results["state"] = dnnl._core._verbose_state()
    """)
    assert verbose_lines(stdout[:stdout.index("LEVEL2")]) == []
    level2 = stdout[stdout.index("LEVEL2"):stdout.index("OFF")]
    assert any(",create:cache_" in line for line in level2)
    assert verbose_lines(stdout[stdout.index("OFF"):]) == []
    assert r["state"]["onednn_kinds"] == 0 and r["state"]["user_kinds"] == 0


def test_a_level_drops_the_users_check_and_dispatch_and_the_message_says_so():
    # oneDNN's dnnl_set_verbose replaces its whole setting: without the
    # interposer, the reasons ONEDNN_VERBOSE gave are gone after a level
    _, r = run("""
        results["before"] = refused(softmax_s32)
        dnnl.set_verbose(2)
        dnnl.set_verbose(0)
        results["after"] = refused(softmax_s32)
    """, env={"ONEDNN_VERBOSE": "dispatch"})
    assert r["before"]["reasons"]
    assert r["after"]["reasons"] == []
    assert "replaced the check and dispatch kinds ONEDNN_VERBOSE gave oneDNN" in r["after"]["message"]


def test_the_interposer_keeps_the_reasons_at_every_level():
    stdout, r = run("""
        dnnl.set_verbose(0)
        results["after0"] = refused(softmax_s32)
        mark("LEVEL2")
        dnnl.set_verbose(2)          # dnnl_set_verbose: creation lines printed...
        dnnl.softmax_forward(softmax_f32())
        results["after2"] = refused(softmax_s32)   # ...and the re-run still explains
        dnnl.set_verbose(0)
        mark("OFF")
        dnnl.softmax_forward(softmax_f32())
        results["after_off"] = refused(softmax_s32)
        results["state"] = dnnl._core._verbose_state()
    """, env=INTERPOSER)
    for when in ("after0", "after2", "after_off"):
        assert r[when]["reasons"], when
        assert all(",create:dispatch," in line for line in r[when]["reasons"])
    level2 = stdout[stdout.index("LEVEL2") + 1:stdout.index("OFF")]
    assert any(",create:cache_" in line for line in level2)     # level 2 prints creations
    # the kinds switched on for the re-run are for the reasons: shown to nobody
    assert not any(",create:dispatch," in line or ",create:check," in line for line in level2)
    assert verbose_lines(stdout[:stdout.index("LEVEL2")]) == []  # level 0 printed nothing
    assert verbose_lines(stdout[stdout.index("OFF"):]) == []
    assert r["state"]["onednn_kinds"] == 0  # oneDNN's setting as set_verbose(0) left it
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
    """, env=INTERPOSER)
    before = verbose_lines(stdout[:stdout.index("BEGIN")])
    inside = [line for line in verbose_lines(stdout[stdout.index("BEGIN"):stdout.index("END")])
              if ",info," not in line and not line.startswith("onednn_verbose,v1,info")]
    after = verbose_lines(stdout[stdout.index("END"):])
    assert before == [] and after == []
    assert inside == r["inside"]["reasons"]  # printed (by the first call) and carried by the error


def test_a_region_oneDNN_cannot_serve_says_so():
    # check and dispatch have no level: without ONEDNN_VERBOSE or the
    # interposer, oneDNN does not print them
    _, r = run("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with dnnl.verbose("dispatch", "profile_exec") as region:
                pass
        results["unavailable"] = region.unavailable
        results["warnings"] = [str(w.message) for w in caught]
    """)
    assert r["unavailable"] == ["dispatch"]
    assert len(r["warnings"]) == 1 and "DNNL_OCL_INTEROP_VERBOSE_CAPTURE=1" in r["warnings"][0]


def test_a_collecting_region_takes_the_lines_of_its_span():
    stdout, r = run("""
        seen = {}
        def other():
            seen["other"] = refused(pooling_with_sum)
        with dnnl.verbose("check", "dispatch", collect=True) as region:
            t = threading.Thread(target=other); t.start(); t.join()
            refused(softmax_s32)
            print("printed meanwhile", flush=True)
        results["lines"] = region.lines
        results["other"] = seen["other"]
        results["state"] = dnnl._core._verbose_state()
    """, env=INTERPOSER)
    assert any(",softmax," in line for line in r["lines"])
    assert any(",pooling," in line for line in r["lines"])  # every thread's, in its span
    assert r["other"]["reasons"] and all(",pooling," in line for line in r["other"]["reasons"])
    assert verbose_lines(stdout) == []  # collected, not printed
    assert "printed meanwhile" in stdout  # other output goes on
    assert r["state"]["collectors"] == 0


# A graph partition's execute runs primitives with an argument they do not
# use: oneDNN's execute-time check prints a line per such primitive, every
# execute, when its check kind is on.
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
""")


def test_graph_executes_print_nothing_after_a_re_run():
    # the interposer switches on the creation-time kinds only, for the re-run:
    # oneDNN's execute-time check (on with the "check" token) stays off
    stdout, r = run(ATTENTION_EXECUTE + textwrap.dedent("""
        results["refused"] = refused(matmul_s8_f32_u8)
        execute(3)
        results["state"] = dnnl._core._verbose_state()
    """), env=INTERPOSER)
    assert r["refused"]["reasons"]
    assert not any(",exec:check," in line for line in stdout)
    assert r["state"]["onednn_kinds"] == dnnl._core._verbose_kinds("error")


def test_execute_time_check_lines_the_user_asked_for_are_printed():
    stdout, _ = run(ATTENTION_EXECUTE + textwrap.dedent("""
        execute(3)
    """), env={"ONEDNN_VERBOSE": "check"})
    lines = [line for line in verbose_lines(stdout) if ",exec:check," in line]
    assert lines and len(lines) % 3 == 0


def test_a_profile_region_prints_executions_only_while_active():
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
        results["state"] = dnnl._core._verbose_state()
    """)
    inside = stdout[stdout.index("BEGIN"):stdout.index("END")]
    assert any(line.startswith("onednn_verbose,v1,primitive,exec,gpu,softmax,") for line in inside)
    assert not any(",exec," in line for line in stdout[stdout.index("END"):])
    costly = dnnl._core._verbose_kinds("profile") | dnnl._core._verbose_kinds("warn")
    assert r["state"]["onednn_kinds"] & costly == 0  # lowered again: nothing costly left on


def test_dispatched_leaves_the_output_alone():
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
        results["state"] = dnnl._core._verbose_state()
    """)
    assert len(r["infos"]) >= 1 and all(i["backend"] for i in r["infos"])
    assert verbose_lines(stdout) == []  # collected, never printed
    assert stdout.index("BEGIN") < stdout.index("END")  # descriptor 1 given back, in order
    assert r["state"]["collectors"] == 0 and r["state"]["interposer"] is False


@pytest.mark.test_hooks
def test_the_interposer_refuses_an_unverified_release():
    assert dnnl._core._interposer_refusal_for(3, 13, 1) == ""
    why = dnnl._core._interposer_refusal_for(3, 14, 0)
    assert "verified against oneDNN 3.13.1 only" in why and "3.14.0" in why and "does not act" in why


def test_verbose_kinds_are_checked():
    with pytest.raises(dnnl.invalid_arguments, match="verbose kind must be one of"):
        dnnl.verbose("dispach")
    with pytest.raises(dnnl.invalid_arguments, match="level must be 1 or 2"):
        dnnl.verbose(3)
    with pytest.raises(TypeError, match="verbose kinds must be str"):
        dnnl.verbose(1.5)
    region = dnnl.verbose("error")
    with region:
        with pytest.raises(dnnl.invalid_arguments, match="already active"):
            region.__enter__()
    with pytest.raises(dnnl.invalid_arguments, match="level must be 0, 1 or 2"):
        dnnl.set_verbose(3)
