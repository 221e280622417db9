"""The recurrent families (vanilla RNN, LSTM with and without peephole and
projection, GRU, linear-before-reset GRU, AUGRU, linear-before-reset AUGRU),
forward and backward, run for real and checked against NumPy.

The reference follows oneDNN's documented cell equations and gate orders
(doc/primitives/rnn.md: LSTM gates i, f, c~, o and peephole gates i, f, o;
GRU gates u, r, o, with a fourth bias gate u' for the linear-before-reset
cells), weights in the ldigo layout. Directions are independent stacks of
layers; bidirectional_concat concatenates the two top layers' outputs over
channels, bidirectional_sum adds them. Forward results are compared in f32
(and f16/bf16, from the values the device received); backward results with
the gradients of backpropagation through time in NumPy (float64), whose
own correctness is checked against central finite differences first.

Sizes: DHC = 51, above the fused-cell path. oneDNN 3.13.1's GPU RNN fuses
the GEMMs of small forward vanilla RNN / LSTM / linear-before-reset GRU
problems into the cell kernel, and choosing that kernel's work-group divides
by ``eu_count / max_eus_per_wg`` (src/gpu/intel/rnn/grid.cpp,
init_ocl_conf): on a device with fewer than 16 compute units that is 0 and
the process dies of SIGFPE. The emulated device now presents a 512-EU Xe-HP
(docs/emulation.md), and tests/test_emulation_device.py runs the small
shapes in child processes; the cases here stay at 51 channels.

Configurations oneDNN refuses on this device are listed in UNSUPPORTED and
asserted to fail with ``dnnl.status.unimplemented``: the test fails if that
changes.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from helpers import (DT, INFERENCE, TAG, ProblemShown, implementation_here, refused_here, watch,
                     workarounds_off)

R = dnnl.rnn_direction
TRAINING = dnnl.prop_kind.forward_training
BACKWARD = dnnl.prop_kind.backward

T, N, DHC = 3, 2, 51  # time steps, batch, hidden channels (see the docstring)
SLC_ONE_LAYER = 7     # source channels of one-layer cases (stacks need DIC)
DIC_PROJECTED = 40    # output channels of LSTM with projection

# What oneDNN answers "could not create a primitive descriptor ... (status:
# unimplemented)" for on this device (src/gpu/intel/rnn/grid.cpp: the GPU
# implementation takes vanilla RNN, LSTM, GRU and linear-before-reset GRU
# only, and no peephole or projection). Keyed by (cell, what): what is the
# data type of a forward case, or "backward"; a backward case is refused at
# its forward_training primitive descriptor, the hint it cannot do without.
UNSUPPORTED = {
    ("augru", "f32"): "no AUGRU on GPU",
    ("augru", "backward"): "no AUGRU on GPU",
    ("lbr_augru", "f32"): "no linear-before-reset AUGRU on GPU",
    ("lbr_augru", "backward"): "no linear-before-reset AUGRU on GPU",
    ("lstm_peephole", "f32"): "no peephole LSTM on GPU",
    ("lstm_peephole", "backward"): "no peephole LSTM on GPU",
    ("lstm_projection", "f32"): "no projection LSTM on GPU",
    ("lstm_projection", "backward"): "no projection LSTM on GPU",
}

# Relative tolerances by data type; absolute ones are the same times the
# reference's largest magnitude (at least 1).
TOL = {"f32": 2e-5, "f16": 1e-2, "bf16": 3e-2}
GRAD_TOL = 1e-4


# --------------------------------------------------------------------------
# cases


class Case(NamedTuple):
    """One RNN configuration. `cell` is a family (lstm with peephole or
    projection spelled lstm_peephole, lstm_projection); `iters` says which
    recurrent states are given: "both", "none", "src" or "dst"."""
    cell: str
    direction: Any
    layers: int = 1
    iters: str = "both"
    dt: str = "f32"
    activation: str = "tanh"  # vanilla RNN: tanh, relu (with alpha), logistic
    any_weights: bool = False  # backward: weights as format_tag.any, reordered

    @property
    def id(self) -> str:
        parts = [self.cell, self.direction.name.replace("unidirectional_", "").replace(
            "bidirectional_", "bi_"), f"L{self.layers}", f"iter_{self.iters}", self.dt]
        if self.cell == "vanilla_rnn":
            parts.insert(1, self.activation)
        if self.any_weights:
            parts.append("any")
        return "-".join(parts)

    @property
    def family(self) -> str:
        return "lstm" if self.cell.startswith("lstm") else self.cell

    @property
    def dirs(self) -> int:
        return 2 if self.direction in (R.bidirectional_concat, R.bidirectional_sum) else 1

    @property
    def gates(self) -> int:
        return {"vanilla_rnn": 1, "lstm": 4}.get(self.family, 3)

    @property
    def bias_gates(self) -> int:
        return self.gates + (1 if self.cell.startswith("lbr_") else 0)

    @property
    def slc(self) -> int:
        return SLC_ONE_LAYER if self.layers == 1 else self.dic

    @property
    def dic(self) -> int:
        return DIC_PROJECTED if self.cell == "lstm_projection" else DHC

    @property
    def dlc(self) -> int:
        return self.dic * (2 if self.direction == R.bidirectional_concat else 1)

    @property
    def peephole(self) -> bool:
        return self.cell in ("lstm_peephole", "lstm_projection")

    @property
    def projection(self) -> bool:
        return self.cell == "lstm_projection"

    @property
    def attention(self) -> bool:
        return self.cell in ("augru", "lbr_augru")


L2R, R2L = R.unidirectional_left2right, R.unidirectional_right2left
CONCAT, SUM = R.bidirectional_concat, R.bidirectional_sum

# (test_backward checks the forward_training outputs of its cases too.)
FORWARD_CASES = [
    Case("vanilla_rnn", L2R, 1, "both", activation="tanh"),
    Case("vanilla_rnn", R2L, 2, "none", activation="relu"),
    Case("vanilla_rnn", CONCAT, 1, "src", activation="logistic"),
    Case("vanilla_rnn", SUM, 2, "dst", activation="tanh"),
    Case("lstm", L2R, 1, "both"),
    Case("lstm", R2L, 2, "none"),
    Case("lstm", SUM, 2, "both"),
    Case("gru", L2R, 2, "both"),
    Case("gru", CONCAT, 1, "both"),
    Case("gru", SUM, 2, "none"),
    Case("lbr_gru", L2R, 1, "src"),
    Case("lbr_gru", R2L, 2, "both"),
    Case("lbr_gru", SUM, 2, "both"),
    Case("augru", L2R, 1, "both"),
    Case("lbr_augru", L2R, 1, "src"),
    Case("lstm_peephole", R2L, 1, "both"),
    Case("lstm_projection", L2R, 2, "both"),
    # lower precision: f16 throughout (LSTM cell state too), bf16 with f32
    # bias and cell state (the GPU implementation takes no bf16 bias)
    Case("vanilla_rnn", L2R, 1, "both", "f16"),
    Case("lstm", L2R, 1, "both", "f16"),
    Case("gru", CONCAT, 1, "both", "f16"),
    Case("lbr_gru", L2R, 2, "both", "f16"),
    Case("vanilla_rnn", R2L, 1, "both", "bf16"),
    Case("lstm", SUM, 1, "both", "bf16"),
    Case("gru", L2R, 1, "both", "bf16"),
    Case("lbr_gru", CONCAT, 1, "both", "bf16"),
]

BACKWARD_CASES = [
    Case("vanilla_rnn", L2R, 1, "both", activation="tanh", any_weights=True),
    Case("vanilla_rnn", CONCAT, 1, "none", activation="relu"),
    Case("lstm", L2R, 2, "both", any_weights=True),
    Case("lstm", CONCAT, 1, "src"),
    Case("gru", R2L, 1, "both"),
    Case("gru", SUM, 2, "dst", any_weights=True),
    Case("lbr_gru", L2R, 1, "both", any_weights=True),
    Case("lbr_gru", SUM, 1, "none"),
    Case("augru", L2R, 1, "both"),
    Case("lbr_augru", L2R, 1, "both"),
    Case("lstm_peephole", L2R, 1, "both"),
    Case("lstm_projection", L2R, 1, "both"),
]


# --------------------------------------------------------------------------
# data: shapes, values, memory


def shapes(case: Case) -> dict[str, list[int]]:
    """Dims of every tensor the case uses, by argument name (ldigo weights)."""
    L, D = case.layers, case.dirs
    out = {
        "src_layer": [T, N, case.slc],
        "weights_layer": [L, D, case.slc, case.gates, DHC],
        "weights_iter": [L, D, case.dic, case.gates, DHC],
        "bias": [L, D, case.bias_gates, DHC],
        "dst_layer": [T, N, case.dlc],
    }
    if case.iters in ("both", "src"):
        out["src_iter"] = [L, D, N, case.dic]
        if case.family == "lstm":
            out["src_iter_c"] = [L, D, N, DHC]
    if case.iters in ("both", "dst"):
        out["dst_iter"] = [L, D, N, case.dic]
        if case.family == "lstm":
            out["dst_iter_c"] = [L, D, N, DHC]
    if case.attention:
        out["attention"] = [T, N, 1]
    if case.peephole:
        out["weights_peephole"] = [L, D, 3, DHC]
    if case.projection:
        out["weights_projection"] = [L, D, DHC, DIC_PROJECTED]
    return out


INPUTS = ["src_layer", "src_iter", "src_iter_c", "attention", "weights_layer", "weights_iter",
          "weights_peephole", "weights_projection", "bias"]
OUTPUTS = ["dst_layer", "dst_iter", "dst_iter_c"]

ARGS = {
    "src_layer": dnnl.ARG_SRC_LAYER, "src_iter": dnnl.ARG_SRC_ITER,
    "src_iter_c": dnnl.ARG_SRC_ITER_C, "attention": dnnl.ARG_AUGRU_ATTENTION,
    "weights_layer": dnnl.ARG_WEIGHTS_LAYER, "weights_iter": dnnl.ARG_WEIGHTS_ITER,
    "weights_peephole": dnnl.ARG_WEIGHTS_PEEPHOLE,
    "weights_projection": dnnl.ARG_WEIGHTS_PROJECTION, "bias": dnnl.ARG_BIAS,
    "dst_layer": dnnl.ARG_DST_LAYER, "dst_iter": dnnl.ARG_DST_ITER,
    "dst_iter_c": dnnl.ARG_DST_ITER_C,
}
DIFF_ARGS = {
    "src_layer": dnnl.ARG_DIFF_SRC_LAYER, "src_iter": dnnl.ARG_DIFF_SRC_ITER,
    "src_iter_c": dnnl.ARG_DIFF_SRC_ITER_C, "attention": dnnl.ARG_DIFF_AUGRU_ATTENTION,
    "weights_layer": dnnl.ARG_DIFF_WEIGHTS_LAYER, "weights_iter": dnnl.ARG_DIFF_WEIGHTS_ITER,
    "weights_peephole": dnnl.ARG_DIFF_WEIGHTS_PEEPHOLE,
    "weights_projection": dnnl.ARG_DIFF_WEIGHTS_PROJECTION, "bias": dnnl.ARG_DIFF_BIAS,
    "dst_layer": dnnl.ARG_DIFF_DST_LAYER, "dst_iter": dnnl.ARG_DIFF_DST_ITER,
    "dst_iter_c": dnnl.ARG_DIFF_DST_ITER_C,
}
TAGS = {3: TAG.tnc, 4: TAG.ldnc, 5: TAG.ldigo}
DTYPES = {"f32": DT.f32, "f16": DT.f16, "bf16": DT.bf16}


def data_type(case: Case, name: str) -> str:
    """The data type of tensor `name`: bf16 keeps bias and cell state in f32."""
    if case.dt == "bf16" and name in ("bias", "src_iter_c", "dst_iter_c", "weights_peephole"):
        return "f32"
    return case.dt


def plain_desc(dims: list[int], dt: str, name: str = "") -> Any:
    """The user layout of an RNN tensor: tnc, ldnc, ldigo, ldgo (bias,
    peephole) or ldio (projection)."""
    tag = TAG.ldio if name == "weights_projection" else TAG.ldgo if len(dims) == 4 and name in (
        "bias", "weights_peephole") else TAGS[len(dims)]
    return dnnl.memory.desc(dims, DTYPES[dt], tag)


def descs(case: Case) -> dict[str, Any]:
    """Memory descriptors of every argument name; zero ones for unused."""
    dims = shapes(case)
    return {name: plain_desc(dims[name], data_type(case, name), name) if name in dims
            else dnnl.memory.desc() for name in INPUTS + OUTPUTS}


def diff_descs(case: Case) -> dict[str, Any]:
    """Diff memory descriptors (f32), zero where the forward one is."""
    dims = shapes(case)
    return {name: plain_desc(dims[name], "f32", name) if name in dims
            else dnnl.memory.desc() for name in INPUTS + OUTPUTS}


def representable(x: np.ndarray, dt: str) -> np.ndarray:
    """The values `x` becomes in data type `dt`, as float64."""
    if dt == "f16":
        return np.asarray(x, np.float16).astype(np.float64)
    if dt == "bf16":
        return dnnl.arrays.float32_from_bf16(dnnl.arrays.bf16_from_float32(x)).astype(np.float64)
    return np.asarray(x, np.float32).astype(np.float64)


def random_inputs(case: Case, seed: int) -> dict[str, np.ndarray]:
    """Random inputs (float64, representable in their data types), weights
    scaled so that gates stay away from saturation."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, dims in shapes(case).items():
        if name in OUTPUTS:
            continue
        if name == "attention":
            values = rng.uniform(0.0, 1.0, dims)
        elif name.startswith("weights"):
            values = rng.uniform(-1.0, 1.0, dims) / np.sqrt(dims[2])
        else:
            values = rng.uniform(-1.0, 1.0, dims)
        out[name] = representable(values, data_type(case, name))
    return out


def put(engine: Any, values: np.ndarray, desc: Any) -> Any:
    """New memory of `desc` (plain) holding `values`."""
    mem = dnnl.memory(desc, engine)
    if desc.get_data_type() == DT.bf16:
        dnnl.arrays.write(mem, dnnl.arrays.bf16_from_float32(values))
    else:
        dnnl.arrays.write(mem, np.asarray(values, dnnl.arrays.numpy_dtype(desc.get_data_type())))
    return mem


def zeroed(engine: Any, desc: Any) -> Any:
    """New memory of `desc` (any layout) holding zeros."""
    mem = dnnl.memory(desc, engine)
    view = mem.map_data()
    view[...] = 0
    mem.unmap_data(view)
    return mem


def get(mem: Any) -> np.ndarray:
    """Contents of plain memory as float64."""
    out = dnnl.arrays.read(mem)
    if mem.get_desc().get_data_type() == DT.bf16:
        return dnnl.arrays.float32_from_bf16(out).astype(np.float64)
    return out.astype(np.float64)


def reorder(engine: Any, stream: Any, src: Any, desc: Any) -> Any:
    """`src` in the layout `desc` (the same memory when they match)."""
    if src.get_desc() == desc:
        return src
    dst = dnnl.memory(desc, engine)
    dnnl.reorder(dnnl.reorder.primitive_desc(engine, src.get_desc(), engine, desc)).execute(
        stream, {dnnl.ARG_FROM: src, dnnl.ARG_TO: dst})
    stream.wait()
    return dst


def assert_close(out: np.ndarray, ref: np.ndarray, tol: float, what: str) -> None:
    """`out` equals `ref` within `tol`, relative and scaled absolute."""
    assert out.shape == ref.shape, what
    scale = max(1.0, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * scale, err_msg=what)


# --------------------------------------------------------------------------
# NumPy reference: forward


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-x))


RELU_ALPHA = 0.25


class Cell(NamedTuple):
    """The weights of one layer of one direction (ldigo slices) and the cell."""
    case: Case
    W: np.ndarray                 # [SLC, G, DHC]
    U: np.ndarray                 # [DIC, G, DHC]
    B: np.ndarray                 # [G (+1), DHC]
    P: np.ndarray | None          # [3, DHC] peephole gates i, f, o
    Rp: np.ndarray | None         # [DHC, DIC] projection


def mm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """[N, I] times [I, G, O] -> [N, G, O]."""
    return np.einsum("ni,igo->ngo", x, w)


def cell_forward(p: Cell, x: np.ndarray, h: np.ndarray, c: np.ndarray,
                 a: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """One step: (h', c', cache). `a` is the AUGRU attention, shape [N, 1]."""
    kind, family = p.case.cell, p.case.family
    gx = mm(x, p.W)
    if family == "vanilla_rnn":
        pre = gx[:, 0] + mm(h, p.U)[:, 0] + p.B[0]
        if p.case.activation == "relu":
            out = np.where(pre > 0, pre, RELU_ALPHA * pre)
        elif p.case.activation == "tanh":
            out = np.tanh(pre)
        else:
            out = sigmoid(pre)
        return out, c, {"x": x, "h": h, "pre": pre, "out": out}
    if family == "lstm":
        pre = gx + mm(h, p.U) + p.B
        P = p.P if p.P is not None else np.zeros((3, DHC))
        i = sigmoid(pre[:, 0] + P[0] * c)
        f = sigmoid(pre[:, 1] + P[1] * c)
        ct = np.tanh(pre[:, 2])
        c_new = f * c + i * ct
        o = sigmoid(pre[:, 3] + P[2] * c_new)
        m = o * np.tanh(c_new)
        h_new = m @ p.Rp if p.Rp is not None else m
        return h_new, c_new, {"x": x, "h": h, "c": c, "i": i, "f": f, "ct": ct, "o": o,
                              "c_new": c_new, "m": m}
    # GRU family
    lbr = kind.startswith("lbr_")
    gh = mm(h, p.U)
    u = sigmoid(gx[:, 0] + gh[:, 0] + p.B[0])
    r = sigmoid(gx[:, 1] + gh[:, 1] + p.B[1])
    if lbr:
        n = gh[:, 2] + p.B[3]
        o = np.tanh(gx[:, 2] + r * n + p.B[2])
    else:
        n = np.zeros_like(u)
        o = np.tanh(gx[:, 2] + (r * h) @ p.U[:, 2] + p.B[2])
    ut = (1.0 - a) * u if p.case.attention else u
    h_new = ut * h + (1.0 - ut) * o
    return h_new, c, {"x": x, "h": h, "u": u, "r": r, "o": o, "n": n, "ut": ut, "a": a}


def layer_cells(case: Case, inputs: dict[str, np.ndarray], layer: int, d: int) -> Cell:
    """The weights of layer `layer` of direction `d`."""
    return Cell(case, inputs["weights_layer"][layer, d], inputs["weights_iter"][layer, d],
                inputs["bias"][layer, d],
                inputs["weights_peephole"][layer, d] if case.peephole else None,
                inputs["weights_projection"][layer, d] if case.projection else None)


def time_order(case: Case, d: int) -> list[int]:
    """Time steps in the order direction `d` of the case walks them."""
    left2right = case.direction == L2R or (case.dirs == 2 and d == 0)
    return list(range(T)) if left2right else list(range(T - 1, -1, -1))


def reference_forward(case: Case, inputs: dict[str, np.ndarray]) -> tuple[dict, list]:
    """{output name: array} and the caches [d][layer][t] backpropagation needs."""
    L, D = case.layers, case.dirs
    h0 = inputs.get("src_iter", np.zeros((L, D, N, case.dic)))
    c0 = inputs.get("src_iter_c", np.zeros((L, D, N, DHC)))
    att = inputs.get("attention", np.zeros((T, N, 1)))
    top, dst_iter, dst_iter_c = [], np.zeros((L, D, N, case.dic)), np.zeros((L, D, N, DHC))
    caches: list = []
    for d in range(D):
        layer_in = inputs["src_layer"]
        caches.append([])
        for layer in range(L):
            p = layer_cells(case, inputs, layer, d)
            h, c = h0[layer, d], c0[layer, d]
            out = np.zeros((T, N, case.dic))
            step_caches: dict[int, dict] = {}
            for t in time_order(case, d):
                h, c, step_caches[t] = cell_forward(p, layer_in[t], h, c, att[t])
                out[t] = h
            dst_iter[layer, d], dst_iter_c[layer, d] = h, c
            caches[d].append(step_caches)
            layer_in = out
        top.append(layer_in)
    if case.direction == CONCAT:
        dst_layer = np.concatenate(top, axis=-1)
    else:
        dst_layer = sum(top[1:], top[0])
    return {"dst_layer": dst_layer, "dst_iter": dst_iter, "dst_iter_c": dst_iter_c}, caches


# --------------------------------------------------------------------------
# NumPy reference: backward (backpropagation through time)


def cell_backward(p: Cell, k: dict, dh_new: np.ndarray, dc_new: np.ndarray,
                  grads: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of one step: (dx, dh, dc, da); weight gradients are added to
    `grads` (W, U, B, P, R)."""
    x, h = k["x"], k["h"]
    family = p.case.family
    da = np.zeros((x.shape[0], 1))
    if family == "vanilla_rnn":
        if p.case.activation == "relu":
            dpre = dh_new * np.where(k["pre"] > 0, 1.0, RELU_ALPHA)
        elif p.case.activation == "tanh":
            dpre = dh_new * (1.0 - k["out"] ** 2)
        else:
            dpre = dh_new * k["out"] * (1.0 - k["out"])
        dgx = dgh = dpre[:, None, :]
        dc = dc_new
        dh = np.zeros_like(h)
        grads["B"][0] += dpre.sum(0)
    elif family == "lstm":
        P = p.P if p.P is not None else np.zeros((3, DHC))
        if p.Rp is not None:
            grads["R"] += k["m"].T @ dh_new
            dm = dh_new @ p.Rp.T
        else:
            dm = dh_new
        i, f, ct, o, c, c_new = k["i"], k["f"], k["ct"], k["o"], k["c"], k["c_new"]
        tc = np.tanh(c_new)
        dao = dm * tc * o * (1.0 - o)
        dc_total = dc_new + dm * o * (1.0 - tc ** 2) + dao * P[2]
        dai = dc_total * ct * i * (1.0 - i)
        daf = dc_total * c * f * (1.0 - f)
        dact = dc_total * i * (1.0 - ct ** 2)
        dc = dc_total * f + dai * P[0] + daf * P[1]
        if p.P is not None:
            grads["P"] += np.stack([(dai * c).sum(0), (daf * c).sum(0), (dao * c_new).sum(0)])
        dgx = dgh = np.stack([dai, daf, dact, dao], axis=1)
        dh = np.zeros_like(h)
        grads["B"] += dgx.sum(0)
    else:
        u, r, o, n, ut = k["u"], k["r"], k["o"], k["n"], k["ut"]
        dut = dh_new * (h - o)
        do = dh_new * (1.0 - ut)
        dh = dh_new * ut
        if p.case.attention:
            du = dut * (1.0 - k["a"])
            da = -(dut * u).sum(1, keepdims=True)
        else:
            du = dut
        dau = du * u * (1.0 - u)
        dao = do * (1.0 - o ** 2)
        if p.case.cell.startswith("lbr_"):
            dar = dao * n * r * (1.0 - r)
            dn = dao * r
            dgx = np.stack([dau, dar, dao], axis=1)
            dgh = np.stack([dau, dar, dn], axis=1)
            grads["B"] += np.stack([dau.sum(0), dar.sum(0), dao.sum(0), dn.sum(0)])
        else:
            drh = dao @ p.U[:, 2].T
            dar = drh * h * r * (1.0 - r)
            dh = dh + drh * r
            grads["U"][:, 2] += (r * h).T @ dao
            dgx = np.stack([dau, dar, dao], axis=1)
            dgh = np.stack([dau, dar, np.zeros_like(dao)], axis=1)
            grads["B"] += dgx.sum(0)
        dc = dc_new
    grads["W"] += np.einsum("ni,ngo->igo", x, dgx)
    grads["U"] += np.einsum("ni,ngo->igo", h, dgh)
    dx = np.einsum("ngo,igo->ni", dgx, p.W)
    dh = dh + np.einsum("ngo,igo->ni", dgh, p.U)
    return dx, dh, dc, da


def reference_backward(case: Case, inputs: dict[str, np.ndarray],
                       diff_dst: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Gradients of sum(dst * diff_dst) over the outputs, by input name."""
    L, D = case.layers, case.dirs
    _, caches = reference_forward(case, inputs)
    out = {name: np.zeros_like(inputs[name]) for name in inputs}
    out.setdefault("src_iter", np.zeros((L, D, N, case.dic)))
    out.setdefault("src_iter_c", np.zeros((L, D, N, DHC)))
    out.setdefault("attention", np.zeros((T, N, 1)))
    ddst_layer = diff_dst["dst_layer"]
    ddst_iter = diff_dst.get("dst_iter", np.zeros((L, D, N, case.dic)))
    ddst_iter_c = diff_dst.get("dst_iter_c", np.zeros((L, D, N, DHC)))
    for d in range(D):
        if case.direction == CONCAT:
            dout = ddst_layer[..., d * case.dic:(d + 1) * case.dic]
        else:
            dout = ddst_layer
        for layer in reversed(range(L)):
            p = layer_cells(case, inputs, layer, d)
            grads = {"W": np.zeros_like(p.W), "U": np.zeros_like(p.U), "B": np.zeros_like(p.B),
                     "P": np.zeros((3, DHC)), "R": np.zeros((DHC, case.dic))}
            dh, dc = ddst_iter[layer, d], ddst_iter_c[layer, d]
            dx_all = np.zeros((T, N, case.slc if layer == 0 else case.dic))
            for t in reversed(time_order(case, d)):
                dx, dh, dc, da = cell_backward(p, caches[d][layer][t], dout[t] + dh, dc, grads)
                dx_all[t] = dx
                out["attention"][t] += da
            out["src_iter"][layer, d], out["src_iter_c"][layer, d] = dh, dc
            out["weights_layer"][layer, d] = grads["W"]
            out["weights_iter"][layer, d] = grads["U"]
            out["bias"][layer, d] = grads["B"]
            if case.peephole:
                out["weights_peephole"][layer, d] = grads["P"]
            if case.projection:
                out["weights_projection"][layer, d] = grads["R"]
            dout = dx_all
        out["src_layer"] += dout
    return out


def loss(case: Case, inputs: dict[str, np.ndarray], diff_dst: dict[str, np.ndarray]) -> float:
    """The scalar whose gradients the backward pass computes: sum(dst * diff_dst)."""
    outputs, _ = reference_forward(case, inputs)
    return float(sum(np.sum(outputs[name] * diff_dst[name]) for name in diff_dst))


def random_diff_dst(case: Case, seed: int) -> dict[str, np.ndarray]:
    """Random gradients of the outputs the case has."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-1.0, 1.0, dims) for name, dims in shapes(case).items()
            if name in OUTPUTS}


# --------------------------------------------------------------------------
# primitive descriptors


FAMILIES: dict[str, tuple[Any, Any]] = {
    "vanilla_rnn": (dnnl.vanilla_rnn_forward, dnnl.vanilla_rnn_backward),
    "lstm": (dnnl.lstm_forward, dnnl.lstm_backward),
    "gru": (dnnl.gru_forward, dnnl.gru_backward),
    "lbr_gru": (dnnl.lbr_gru_forward, dnnl.lbr_gru_backward),
    "augru": (dnnl.augru_forward, dnnl.augru_backward),
    "lbr_augru": (dnnl.lbr_augru_forward, dnnl.lbr_augru_backward),
}
ACTIVATIONS = {"tanh": dnnl.algorithm.eltwise_tanh, "relu": dnnl.algorithm.eltwise_relu,
               "logistic": dnnl.algorithm.eltwise_logistic}


def ordered(case: Case, ds: dict[str, Any]) -> list[Any]:
    """The descriptors in the order of the family's C++ constructor."""
    names = ["src_layer", "src_iter"]
    if case.family == "lstm":
        names += ["src_iter_c"]
    if case.attention:
        names += ["attention"]
    names += ["weights_layer", "weights_iter"]
    if case.peephole:
        names += ["weights_peephole"]
    if case.projection:
        names += ["weights_projection"]
    names += ["bias", "dst_layer", "dst_iter"]
    if case.family == "lstm":
        names += ["dst_iter_c"]
    return [ds[name] for name in names]


def forward_pd(engine: Any, case: Case, prop: Any, ds: dict[str, Any]) -> Any:
    """The family's forward primitive descriptor for the descriptors `ds`."""
    family = FAMILIES[case.family][0]
    if case.family == "vanilla_rnn":
        head = [engine, prop, ACTIVATIONS[case.activation], case.direction]
        if case.activation == "relu":
            return family.primitive_desc(*head, *ordered(case, ds), alpha=RELU_ALPHA)
        return family.primitive_desc(*head, *ordered(case, ds))
    return family.primitive_desc(engine, prop, case.direction, *ordered(case, ds))


def backward_pd(engine: Any, case: Case, ds: dict[str, Any], dds: dict[str, Any],
                hint: Any) -> Any:
    """The family's backward primitive descriptor (diff descriptors `dds`)."""
    family = FAMILIES[case.family][1]
    descriptors = ordered(case, ds) + ordered(case, dds)
    if case.family == "vanilla_rnn":
        head = [engine, BACKWARD, ACTIVATIONS[case.activation], case.direction]
        if case.activation == "relu":
            return family.primitive_desc(*head, *descriptors, RELU_ALPHA, hint)
        return family.primitive_desc(*head, *descriptors, hint)
    return family.primitive_desc(engine, BACKWARD, case.direction, *descriptors, hint)


def refused(key: tuple[str, str], factory: Callable[[], Any]) -> bool:
    """Whether `key` is listed in UNSUPPORTED, after checking that oneDNN
    refuses `factory()` with status unimplemented if so."""
    if key not in UNSUPPORTED:
        return False
    with pytest.raises(dnnl.error, match="could not create a primitive descriptor") as info:
        factory()
    error: Any = info.value  # the stub of dnnl.error does not declare .status
    assert error.status == dnnl.status.unimplemented
    return True


# --------------------------------------------------------------------------
# the NumPy reference checks itself


REFERENCE_CASES = [
    Case("vanilla_rnn", L2R, 1, "both", activation="tanh"),
    Case("vanilla_rnn", R2L, 2, "both", activation="relu"),
    Case("vanilla_rnn", CONCAT, 1, "both", activation="logistic"),
    Case("lstm", SUM, 2, "both"),
    Case("lstm_peephole", CONCAT, 1, "both"),
    Case("lstm_projection", L2R, 2, "both"),
    Case("gru", L2R, 2, "both"),
    Case("lbr_gru", CONCAT, 1, "both"),
    Case("augru", L2R, 1, "both"),
    Case("lbr_augru", L2R, 1, "both"),
]


@pytest.mark.parametrize("case", REFERENCE_CASES, ids=lambda c: c.id)
def test_reference_gradients_match_finite_differences(case):
    """The backpropagation-through-time reference agrees with central finite
    differences of the NumPy forward (float64) at a few entries of every
    input, so the device's gradients are checked against something right."""
    inputs = random_inputs(case, 10)
    diff_dst = random_diff_dst(case, 11)
    grads = reference_backward(case, inputs, diff_dst)
    rng = np.random.default_rng(12)
    eps = 1e-6
    for name, values in inputs.items():
        for flat in rng.choice(values.size, size=min(6, values.size), replace=False):
            index = np.unravel_index(flat, values.shape)
            plus = {k: v.copy() for k, v in inputs.items()}
            minus = {k: v.copy() for k, v in inputs.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            numeric = (loss(case, plus, diff_dst) - loss(case, minus, diff_dst)) / (2 * eps)
            assert grads[name][index] == pytest.approx(numeric, rel=1e-5, abs=1e-7), (name, index)


# --------------------------------------------------------------------------
# forward


def forward_args(engine: Any, case: Case, pd: Any, inputs: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """(execution args, {output name: memory}) for the inputs, in the
    layouts the primitive descriptor reports."""
    args = {}
    for name, values in inputs.items():
        desc = pd.query_md(dnnl.query.exec_arg_md, ARGS[name])
        args[ARGS[name]] = put(engine, values, desc)
    outputs = {}
    for name in OUTPUTS:
        desc = pd.query_md(dnnl.query.exec_arg_md, ARGS[name])
        if not desc.is_zero():
            outputs[name] = args[ARGS[name]] = dnnl.memory(desc, engine)
    return args, outputs


def check_outputs(case: Case, outputs: dict[str, Any], ref: dict[str, np.ndarray]) -> None:
    """The device's outputs (exactly those the case has) against the reference."""
    tol = TOL[case.dt]
    assert set(outputs) == set(shapes(case)) & set(OUTPUTS)
    for name, mem in outputs.items():
        expected = representable(ref[name], data_type(case, name))
        assert_close(get(mem), expected, tol, name)


@pytest.mark.parametrize("case", FORWARD_CASES, ids=lambda c: c.id)
def test_forward(engine, stream, case):
    """forward_inference against the NumPy reference; the descriptor
    queries report what was asked for, and no workspace."""
    ds = descs(case)
    if refused((case.cell, case.dt), lambda: forward_pd(engine, case, INFERENCE, ds)):
        return
    pd = forward_pd(engine, case, INFERENCE, ds)
    assert pd.get_cell_kind() == {
        "vanilla_rnn": dnnl.algorithm.vanilla_rnn, "lstm": dnnl.algorithm.vanilla_lstm,
        "gru": dnnl.algorithm.vanilla_gru, "lbr_gru": dnnl.algorithm.lbr_gru}[case.family]
    assert pd.get_direction() == case.direction
    assert pd.src_layer_desc() == ds["src_layer"] and pd.dst_layer_desc() == ds["dst_layer"]
    assert pd.weights_layer_desc() == ds["weights_layer"]
    assert pd.weights_iter_desc() == ds["weights_iter"]
    assert pd.bias_desc() == ds["bias"]
    assert pd.src_iter_desc() == ds["src_iter"] and pd.dst_iter_desc() == ds["dst_iter"]
    assert pd.src_iter_c_desc() == ds["src_iter_c"]
    assert pd.workspace_desc().is_zero()
    inputs = random_inputs(case, 1)
    args, outputs = forward_args(engine, case, pd, inputs)
    FAMILIES[case.family][0](pd).execute(stream, args)
    stream.wait()
    check_outputs(case, outputs, reference_forward(case, inputs)[0])


# --------------------------------------------------------------------------
# backward


@pytest.mark.parametrize("case", BACKWARD_CASES, ids=lambda c: c.id)
def test_backward(engine, stream, case):
    """forward_training (checked against NumPy, its workspace kept), then
    backward with the same descriptors: every diff output against the
    NumPy gradients. Weights and weight gradients are the user's ldigo, or
    (any_weights) format_tag.any in the backward descriptor, as oneDNN
    recommends, with the user's data reordered in and out of the layouts it
    picks."""
    ds = descs(case)
    if refused((case.cell, "backward"), lambda: forward_pd(engine, case, TRAINING, ds)):
        return
    fwd_pd = forward_pd(engine, case, TRAINING, ds)
    assert not fwd_pd.workspace_desc().is_zero()
    inputs = random_inputs(case, 2)
    args, outputs = forward_args(engine, case, fwd_pd, inputs)
    workspace = dnnl.memory(fwd_pd.workspace_desc(), engine)
    args[dnnl.ARG_WORKSPACE] = workspace
    FAMILIES[case.family][0](fwd_pd).execute(stream, args)
    stream.wait()
    check_outputs(case, outputs, reference_forward(case, inputs)[0])

    bwd_ds, dds = dict(ds), diff_descs(case)
    if case.any_weights:
        for name in ("weights_layer", "weights_iter"):
            bwd_ds[name] = dds[name] = dnnl.memory.desc(shapes(case)[name], DT.f32, TAG.any)
    pd = backward_pd(engine, case, bwd_ds, dds, fwd_pd)
    assert pd.get_prop_kind() == BACKWARD
    assert pd.workspace_desc() == fwd_pd.workspace_desc()
    if case.any_weights:  # oneDNN's own layout (ldgoi for backward): the reorders run
        assert pd.weights_layer_desc() != ds["weights_layer"]
    bwd_args = {dnnl.ARG_WORKSPACE: workspace}
    for name in inputs:
        bwd_args[ARGS[name]] = reorder(engine, stream, args[ARGS[name]],
                                       pd.query_md(dnnl.query.exec_arg_md, ARGS[name]))
    for name, mem in outputs.items():
        bwd_args[ARGS[name]] = mem
    diff_dst = random_diff_dst(case, 3)
    for name, values in diff_dst.items():
        bwd_args[DIFF_ARGS[name]] = put(engine, values, pd.query_md(
            dnnl.query.exec_arg_md, DIFF_ARGS[name]))
    diffs = {name: zeroed(engine, pd.query_md(dnnl.query.exec_arg_md, DIFF_ARGS[name]))
             for name in inputs}  # weight gradients accumulate: all start at zero
    bwd_args.update({DIFF_ARGS[name]: mem for name, mem in diffs.items()})
    FAMILIES[case.family][1](pd).execute(stream, bwd_args)
    stream.wait()

    expected = reference_backward(case, inputs, diff_dst)
    for name, mem in diffs.items():
        plain = reorder(engine, stream, mem, plain_desc(shapes(case)[name], "f32", name))
        assert_close(get(plain), expected[name], GRAD_TOL, f"diff_{name}")


# --------------------------------------------------------------------------
# oneDNN's known problem rnn-offsets: a sub-memory argument (docs/known-problems.md)


def _sub_memory_source(engine, case):
    """The descriptors of `case` with its source layer as channels [7, 14) of
    a [T, N, 14] parent, the inputs, and the parent's values (whose first
    channels differ from the source's)."""
    ds, inputs = descs(case), random_inputs(case, 4)
    parent_desc = plain_desc([T, N, 2 * SLC_ONE_LAYER], "f32")
    ds["src_layer"] = parent_desc.submemory_desc([T, N, SLC_ONE_LAYER], [0, 0, SLC_ONE_LAYER])
    parent = np.concatenate([inputs["src_layer"] * 0.5 - 0.25, inputs["src_layer"]], axis=2)
    return ds, inputs, parent_desc, parent


def test_lstm_with_a_sub_memory_source_is_refused(engine):
    """oneDNN's GPU RNN ignores sub-memory offsets (known problem rnn-offsets):
    the descriptor is refused with the problem named (empty with allow_empty)
    instead of reading the parent's first channels."""
    case = Case("lstm", L2R, 1, "both")
    ds, _, _, _ = _sub_memory_source(engine, case)
    refused_here("rnn-offsets", lambda: forward_pd(engine, case, INFERENCE, ds))


@watch("rnn-offsets", "GPU RNN (ocl:simple) ignores sub-memory offsets")
def test_lstm_with_a_sub_memory_source_raw_onednn(engine, stream):
    """oneDNN's own behaviour (the binding's refusal switched off): an LSTM over
    channels [7, 14) of a [T, N, 14] tensor must read those channels. Today it
    reads channels [0, 7) (a reorder of the same memory reads the right ones);
    the day oneDNN is fixed this passes, the strict xfail fails, and the
    workaround's `fixed` version is due."""
    case = Case("lstm", L2R, 1, "both")
    ds, inputs, parent_desc, parent = _sub_memory_source(engine, case)
    implementation_here("rnn-offsets", lambda: forward_pd(engine, case, INFERENCE, ds))
    with workarounds_off("rnn-offsets"):
        pd = forward_pd(engine, case, INFERENCE, ds)
    args, outputs = forward_args(
        engine, case, pd, {k: v for k, v in inputs.items() if k != "src_layer"})
    parent_mem = put(engine, parent, parent_desc)
    sub = dnnl.ocl_interop.make_memory(ds["src_layer"], engine,
                                       dnnl.ocl_interop.memory_kind.buffer,
                                       dnnl.ocl_interop.get_mem_object(parent_mem))
    assert np.allclose(get(reorder(engine, stream, sub, plain_desc(
        [T, N, SLC_ONE_LAYER], "f32"))), inputs["src_layer"])  # the memory is right
    args[dnnl.ARG_SRC_LAYER] = sub
    dnnl.lstm_forward(pd).execute(stream, args)
    stream.wait()
    right = reference_forward(case, inputs)[0]["dst_layer"]
    try:
        assert_close(get(outputs["dst_layer"]), right, TOL["f32"], "dst_layer")
    except AssertionError as e:
        raise ProblemShown(str(e)) from None
