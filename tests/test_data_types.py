"""The one data-type table (cpp/common/data_types.cpp), seen from Python as
``_core._data_type_table``: it covers exactly the data types the headers'
enums declare, agrees with oneDNN's own sizes, and is what dnnl.arrays, the
graph's sizes and bf16 conversion read."""

import numpy as np
import pytest

import dnnl_ocl_interop as dnnl
from dnnl_ocl_interop import arrays

TABLE = {row[0]: row for row in dnnl._core._data_type_table}
MEMORY_TYPES = dnnl.memory.data_type
GRAPH_TYPES = dnnl.graph.logical_tensor.data_type


def test_the_table_covers_the_enums_exactly():
    """Every member of both enums (listed from the headers at build time) has
    a row saying which enum it is in, and every row is in the enums it says."""
    assert {name for name, row in TABLE.items() if row[1]} == set(MEMORY_TYPES.__members__)
    assert {name for name, row in TABLE.items() if row[2]} == set(GRAPH_TYPES.__members__)
    for name, row in TABLE.items():  # the C values are shared by the two enums
        if row[1] and row[2]:
            assert MEMORY_TYPES.__members__[name].value == GRAPH_TYPES.__members__[name].value, name


@pytest.mark.parametrize("name", sorted(n for n, row in TABLE.items() if row[1]))
def test_sizes_agree_with_onednn(name):
    _, _, _, bits, numpy, holds = TABLE[name]
    size = dnnl.memory.data_type_size(MEMORY_TYPES.__members__[name])
    if bits >= 8:
        assert size * 8 == bits, name
    elif bits:  # 4-bit types: oneDNN counts the byte two of them share
        assert size == 1, name
    else:  # undef: oneDNN's size_t(-1)
        assert size == 2 ** 64 - 1, name
    if numpy is not None:
        assert np.dtype(numpy).itemsize * 8 == bits, name
        assert dnnl.memory.numpy_dtype(MEMORY_TYPES.__members__[name]) == np.dtype(numpy)
    else:
        assert holds == "nothing" and dnnl.memory.numpy_dtype(MEMORY_TYPES.__members__[name]) is None


@pytest.mark.parametrize("name", sorted(n for n, row in TABLE.items() if row[2] and row[3]))
def test_graph_sizes_come_from_the_table(name):
    """A strided logical tensor's byte size is its elements times the
    table's bits (what the binding checks user storage against)."""
    bits = TABLE[name][3]
    desc = dnnl.graph.logical_tensor(0, GRAPH_TYPES.__members__[name], [4, 6], [6, 1])
    assert desc.get_mem_size() * 8 == 24 * bits


def test_arrays_maps_the_numpy_dtypes_that_hold_values():
    expected = {np.float32: "f32", np.float16: "f16", np.float64: "f64", np.int8: "s8",
                np.uint8: "u8", np.int32: "s32", np.int64: "s64"}
    for dtype, name in expected.items():
        assert arrays.data_type(dtype) == MEMORY_TYPES.__members__[name]
    assert arrays._DATA_TYPES == {np.dtype(k): MEMORY_TYPES.__members__[v] for k, v in expected.items()}
    with pytest.raises(TypeError, match="bf16 bits"):
        arrays.data_type(np.uint16)
    with pytest.raises(TypeError, match="complex64"):
        arrays.data_type(np.complex64)


def _bf16_reference(values):
    """Round to nearest even in exact integer arithmetic, NaN quieted."""
    out = []
    for v in np.asarray(values, np.float32).ravel():
        bits = int(v.view(np.uint32))
        if np.isnan(v):
            out.append((bits >> 16) | 0x40)
            continue
        upper, lower = bits >> 16, bits & 0xFFFF
        if lower > 0x8000 or (lower == 0x8000 and upper & 1):
            upper += 1
        out.append(upper & 0xFFFF)
    return np.array(out, np.uint16)


def test_bf16_rounding_is_oneDNNs():
    """The table's rounding (one home, also used for host scalars): to
    nearest even, ties both ways, overflow to infinity, NaNs quieted."""
    specials = np.array([0.0, -0.0, 1.0, 1.00390625, 1.01171875, 1.0078125, 3.4e38, -3.4e38,
                         np.inf, -np.inf, np.nan, 1e-40], np.float32)
    nan_payload = np.array([0x7F800001], np.uint32).view(np.float32)  # a signalling NaN
    values = np.concatenate([specials, nan_payload,
                             np.random.default_rng(0).standard_normal(1000).astype(np.float32)])
    got = arrays.bf16_from_float32(values.reshape(-1, 1))
    assert got.dtype == np.uint16 and got.shape == (values.size, 1)
    np.testing.assert_array_equal(got.ravel(), _bf16_reference(values))
    back = arrays.float32_from_bf16(got.ravel())
    assert np.isnan(back[10]) and np.isnan(back[12])


def test_a_bf16_host_scalar_rounds_as_arrays_do():
    desc = dnnl.memory.desc.host_scalar(MEMORY_TYPES.bf16)
    for value in (1.00390625, 1.01171875, -2.5e-3):
        mem = dnnl.memory(desc, value)
        expected = arrays.float32_from_bf16(arrays.bf16_from_float32([value]))[0]
        assert mem.get_host_scalar_value() == expected
