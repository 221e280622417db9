#include "common/enum_caster.hpp" // first: see the header

#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <variant>
#include <string>
#include <utility>

#include <pybind11/native_enum.h>
#include <pybind11/numpy.h>
#include <pybind11/typing.h>
#include <pybind11/stl.h>

#include "common/data_types.hpp"
#include "common/errors.hpp"
#include "common/memory_descs.hpp"
#include "common/fork_guard.hpp"
#include "common/py_values.hpp"
#include "core/objects.hpp"
#include "common/storage_checks.hpp"
#include "oneapi/dnnl/dnnl_ocl.hpp"

namespace py = pybind11;
using dnnl::memory;

namespace dnnl_ocl_interop {
namespace {

using dt = memory::data_type;
using tag = memory::format_tag;

// The memory a mapping is made and undone through. For buffer memory, a
// twin on the same cl_mems (oneDNN retains them): set_data_handle on the
// memory while a view lives, which oneDNN takes, would otherwise send the
// unmap to the new storage (refused) and leave the old cl_mem mapped, and
// pinned, for ever. USM storage is not reference counted (oneDNN frees its
// own at set_data_handle): USM and host-scalar memory map through itself.
dnnl::memory mapping_memory(const memory_object &m) {
    namespace oi = dnnl::ocl_interop;
    if (m.host_scalar || m.engine.get_kind() != dnnl::engine::kind::gpu
            || oi::get_memory_kind(m.memory) != oi::memory_kind::buffer)
        return m.memory;
    std::vector<void *> handles;
    for (int i = 0; i < m.num_handles; ++i) handles.push_back(m.memory.get_data_handle(i));
    return oi::make_memory(m.desc, m.engine, oi::memory_kind::buffer, handles);
}

// Keeps a memory mapped while any NumPy view of the mapping lives; unmaps
// when the last view goes, unless unmap_data came first.
struct mapped_data {
    mapped_data(memory_object owner, dnnl::memory through, void *ptr, int index)
        : owner(std::move(owner)), through(std::move(through)), ptr(ptr), index(index) {}
    mapped_data(const mapped_data &) = delete; // one mapping, one unmap
    mapped_data &operator=(const mapped_data &) = delete;

    memory_object owner;  // which memory the view is of (unmap_data checks)
    dnnl::memory through; // mapping_memory(owner) at map time
    void *ptr;
    int index; // which buffer of the layout
    bool mapped = true;

    // unmap_data waits for the device (clFinish): without the GIL.
    void unmap() {
        if (!mapped) return;
        mapped = false;
        if (fork_guard::forked_after_use()) return; // the child's OpenCL is unusable: left as is
        py::gil_scoped_release release;
        dnnl::memory done = std::move(through); // its cl_mem reference goes with the mapping
        done.unmap_data(ptr, index);
    }
    ~mapped_data() {
        try {
            unmap();
        } catch (...) {} // a destructor must not throw; nothing to report to
    }
};

// Why the fields of a descriptor read from a blob cannot be a descriptor's
// (oneDNN copies a blob without looking: a damaged one divides by zero or
// reads past its arrays in get_size()), or "". Opaque layouts are taken as
// they are: their fields are oneDNN's own.
std::string unsound_fields(const_dnnl_memory_desc_t md) {
    int ndims = -1;
    dnnl_memory_desc_query(md, dnnl_query_ndims_s32, &ndims);
    if (ndims < 0 || ndims > DNNL_MAX_NDIMS) return "ndims " + std::to_string(ndims);
    // The enum fields are read as ints: a damaged blob's value may be no
    // value of the enum, which C++ may not load as one (UBSan: "not a valid
    // value for type"); up to the enum's _max they are.
    int type = dnnl_data_type_undef;
    dnnl_memory_desc_query(md, dnnl_query_data_type, &type);
    if (type != dnnl_data_type_undef
            && (type < 0 || type > dnnl_data_type_max
                    || !data_types::find(static_cast<dnnl_data_type_t>(type))))
        return "data type " + std::to_string(type);
    int raw_kind = dnnl_format_kind_undef;
    dnnl_memory_desc_query(md, dnnl_query_format_kind, &raw_kind);
    if (raw_kind < 0 || raw_kind > dnnl_format_kind_max)
        return "format kind " + std::to_string(raw_kind);
    const auto kind = static_cast<dnnl_format_kind_t>(raw_kind);
    if (kind == dnnl_format_kind_host_scalar) return ""; // one element (padded dims left 0)
    const dnnl_dims_t *dims = nullptr, *padded = nullptr, *offsets = nullptr;
    dnnl_memory_desc_query(md, dnnl_query_dims, &dims);
    dnnl_memory_desc_query(md, dnnl_query_padded_dims, &padded);
    dnnl_memory_desc_query(md, dnnl_query_padded_offsets, &offsets);
    dnnl_dim_t offset0 = 0;
    dnnl_memory_desc_query(md, dnnl_query_submemory_offset_s64, &offset0);
    if (offset0 < 0) return "offset " + std::to_string(offset0);
    for (int d = 0; d < ndims; ++d) {
        auto n = (*dims)[d], p = (*padded)[d];
        bool runtime = n == DNNL_RUNTIME_DIM_VAL || p == DNNL_RUNTIME_DIM_VAL;
        if (!runtime && n < 0) return "dimension " + std::to_string(d);
        if (!runtime && kind == dnnl_blocked
                && (p < n || (*offsets)[d] < 0 || (*offsets)[d] > p - n))
            return "padded dimension " + std::to_string(d);
    }
    switch (kind) {
        case dnnl_format_kind_undef:
        case dnnl_format_kind_any:
        case dnnl_format_kind_opaque: return "";
        case dnnl_blocked: break;
        case dnnl_format_kind_sparse: {
            int encoding = dnnl_sparse_encoding_undef; // an int, as the kind above
            dnnl_dim_t nnz = -1;
            dnnl_memory_desc_query_v2(md, dnnl_query_sparse_encoding, 0, &encoding);
            dnnl_memory_desc_query_v2(md, dnnl_query_nnz_s64, 0, &nnz);
            if (encoding != dnnl_csr && encoding != dnnl_coo && encoding != dnnl_packed)
                return "sparse encoding " + std::to_string(encoding);
            return nnz < 0 ? "nnz " + std::to_string(nnz) : "";
        }
        default: return "format kind " + std::to_string(kind);
    }
    int nblks = -1;
    const dnnl_dims_t *strides = nullptr, *blks = nullptr, *idxs = nullptr;
    dnnl_memory_desc_query(md, dnnl_query_inner_nblks_s32, &nblks);
    dnnl_memory_desc_query(md, dnnl_query_strides, &strides);
    dnnl_memory_desc_query(md, dnnl_query_inner_blks, &blks);
    dnnl_memory_desc_query(md, dnnl_query_inner_idxs, &idxs);
    if (nblks < 0 || nblks > DNNL_MAX_NDIMS) return "inner_nblks " + std::to_string(nblks);
    dnnl_dim_t blocks[DNNL_MAX_NDIMS];
    std::fill(blocks, blocks + DNNL_MAX_NDIMS, 1);
    for (int b = 0; b < nblks; ++b) {
        auto idx = (*idxs)[b], blk = (*blks)[b];
        if (idx < 0 || idx >= ndims || blk <= 0
                || __builtin_mul_overflow(blocks[idx], blk, &blocks[idx]))
            return "inner block " + std::to_string(b);
    }
    for (int d = 0; d < ndims; ++d) {
        auto p = (*padded)[d], s = (*strides)[d];
        if (p != DNNL_RUNTIME_DIM_VAL && p % blocks[d] != 0)
            return "padded dimension " + std::to_string(d) + " is no multiple of its blocks";
        // (oneDNN steps along no dimension of one padded element)
        if (s < 0 && s != DNNL_RUNTIME_DIM_VAL && p != 1) return "stride " + std::to_string(d);
    }
    return "";
}

// The NumPy dtype that stores elements of `t` (the data-type table's), or
// None for sub-byte types (shown as raw bytes).
py::object numpy_dtype(dt t) {
    const data_types::row *r = data_types::find(t);
    return r && r->numpy ? py::object(py::dtype(r->numpy)) : py::object(py::none());
}

// A NumPy array over buffer `index` of a mapped host copy: shaped and strided
// by the descriptor when its layout is plain; flat and typed for a sparse
// layout's buffers (values, indices) and a host scalar (0-d); raw bytes
// otherwise.
py::array mapped_array(const memory::desc &desc, int index, void *ptr, py::handle base) {
    py::object dtype = numpy_dtype(desc.get_data_type(index));
    auto kind = desc.get_format_kind();
    auto bytes = static_cast<py::ssize_t>(desc.get_size(index));
    if (dtype.is_none()) return py::array(py::dtype("uint8"), {bytes}, {}, ptr, base);
    auto typed = py::reinterpret_borrow<py::dtype>(dtype);
    auto item = typed.itemsize();
    if (kind == memory::format_kind::host_scalar)
        return py::array(typed, std::vector<py::ssize_t> {}, std::vector<py::ssize_t> {}, ptr,
                base);
    if (kind == memory::format_kind::sparse) return py::array(typed, {bytes / item}, {}, ptr, base);
    if (kind != memory::format_kind::blocked || desc.get_inner_nblks() != 0)
        return py::array(py::dtype("uint8"), {bytes}, {}, ptr, base);
    std::vector<py::ssize_t> shape, strides;
    for (auto d : desc.get_dims()) shape.push_back(d);
    for (auto s : desc.get_strides()) strides.push_back(s * item);
    char *first = static_cast<char *>(ptr) + desc.get_submemory_offset() * item;
    return py::array(py::reinterpret_borrow<py::dtype>(dtype), shape, strides, first, base);
}

// A Python number as the bytes of one `t` element (bf16 rounded to nearest
// even from f32), for host-scalar memory.
std::vector<uint8_t> host_scalar_bytes(dt t, py::handle value) {
    if (!PyNumber_Check(value.ptr()) || PyUnicode_Check(value.ptr()))
        throw_type_error("value", "a number", value);
    const data_types::row *r = data_types::find(t);
    if (t == dt::bf16) {
        uint16_t half = data_types::bf16_from_f32(value.cast<float>());
        return {static_cast<uint8_t>(half & 0xff), static_cast<uint8_t>(half >> 8)};
    }
    // Types NumPy stores only as bits (f8, e8m0) have no NumPy value to convert.
    if (!r || r->holds != data_types::numpy_holds::values)
        throw_invalid_argument(std::string("host scalars of data type ") + data_types::name(t)
                + " are not supported");
    // NumPy's conversion: OverflowError for an int out of the type's range.
    py::array converted = py::module_::import("numpy").attr("asarray")(value, numpy_dtype(t));
    auto *data = static_cast<const uint8_t *>(converted.data());
    return std::vector<uint8_t>(data, data + converted.itemsize());
}

py::object host_scalar_value(dt t, const std::vector<uint8_t> &bytes) {
    if (t == dt::bf16)
        return py::float_(
                data_types::f32_from_bf16(static_cast<uint16_t>(bytes[0] | (bytes[1] << 8))));
    py::object dtype = numpy_dtype(t);
    if (dtype.is_none())
        throw_invalid_argument(std::string("host scalars of data type ") + data_types::name(t)
                + " are not supported");
    py::bytes raw(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    return py::module_::import("numpy").attr("frombuffer")(raw, dtype)[py::int_(0)].attr("item")();
}

std::string desc_repr(const memory::desc &d) {
    std::ostringstream os;
    os << "<dnnl.memory.desc dims=[";
    auto dims = d.get_dims();
    for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
    os << "] " << data_types::name(d.get_data_type());
    if (d.get_format_kind() == memory::format_kind::blocked) {
        os << " strides=[";
        auto strides = d.get_strides();
        for (size_t i = 0; i < strides.size(); ++i) os << (i ? ", " : "") << strides[i];
        os << "]";
        if (d.get_inner_nblks()) os << " blocked";
    } else if (d.get_format_kind() == memory::format_kind::any) {
        os << " any";
    }
    os << " size=" << d.get_size() << ">";
    return os.str();
}

// Members from the headers (core/enums.cpp); what a data type is lives in
// the data-type table (common/data_types.cpp).
void bind_enums(py::class_<memory_object> &mem) {
#define VALUE(member) .value(#member, E::member)
    {
        using E = dt;
        py::native_enum<E>(mem, "data_type", "enum.Enum",
                "Element data types of memory descriptors.")
#include "onednn_enum_memory_data_type.inc"
                .finalize();
    }
    {
        using E = memory::format_kind;
        py::native_enum<E>(mem, "format_kind", "enum.Enum",
                "How a descriptor's layout is given: undef, any, blocked, opaque, sparse, "
                "host_scalar.")
#include "onednn_enum_format_kind.inc"
                .finalize();
    }
    {
        using E = memory::sparse_encoding;
        py::native_enum<E>(mem, "sparse_encoding", "enum.Enum",
                "Encodings of sparse descriptors (memory.desc.csr, coo, packed).")
#include "onednn_enum_sparse_encoding.inc"
                .finalize();
    }
    {
        using E = tag; // some 1,670 layouts and their aliases
        py::native_enum<E>(mem, "format_tag", "enum.Enum",
                "Named memory layouts (dimension orders and blockings), as in "
                "dnnl::memory::format_tag.")
#include "onednn_enum_format_tag.inc"
                .finalize();
    }
#undef VALUE
}

// C++ gives an empty handle where allow_empty lets construction fail; Python
// gets the zero descriptor the documentation promises.
memory::desc or_zero(memory::desc d) {
    return d.get(/*allow_empty=*/true) ? d : memory::desc();
}

// A descriptor-returning member or static function with allow_empty, as above.
template <typename... Args, typename F>
auto zero_if_empty(F f) {
    return [f](Args... args) { return or_zero(std::invoke(f, args...)); };
}

void bind_desc(py::class_<memory_object> &mem) {
    py::class_<memory::desc> desc(mem, "desc",
            "A memory descriptor (dnnl::memory::desc): dimensions, data type "
            "and layout. Compare with ==.");
    desc.def(py::init<>(), "A zero descriptor (no dimensions, size 0).");
    desc.def(py::init<const memory::desc &>(), py::arg("other"), "A copy of `other`.");
    desc.def(py::init([](const memory::dims &dims, dt data_type, tag format_tag, bool allow_empty) {
        return or_zero(memory::desc(dims, data_type, format_tag, allow_empty));
    }),
            py::arg("dims"), py::arg("data_type"), py::arg("format_tag"),
            py::arg("allow_empty") = false,
            "Descriptor of `dims` elements of `data_type` in layout `format_tag`; "
            "with `allow_empty`, a zero descriptor instead of an error when "
            "oneDNN refuses them.");
    desc.def(py::init([](const memory::dims &dims, dt data_type, const memory::dims &strides,
                              bool allow_empty) {
        if (strides.size() != dims.size()) // as oneDNN's C++ API checks it
            throw_invalid_argument("desc(): " + std::to_string(strides.size()) + " strides for "
                    + std::to_string(dims.size()) + " dims");
        // oneDNN takes them, but data would then lie before the handle
        // (along a dimension of one element, nothing is stepped over).
        for (size_t d = 0; d < strides.size(); ++d)
            if (strides[d] < 0 && strides[d] != DNNL_RUNTIME_DIM_VAL && dims[d] != 1)
                throw_invalid_argument("desc(): strides must not be negative");
        return or_zero(memory::desc(dims, data_type, strides, allow_empty));
    }),
            py::arg("dims"), py::arg("data_type"), py::arg("strides"),
            py::arg("allow_empty") = false,
            "Descriptor of `dims` elements of `data_type` with explicit "
            "`strides` (in elements); `allow_empty` as above.");
    desc.def(py::init([](const py::bytes &blob) {
        // oneDNN reads a descriptor's worth of bytes from the blob without
        // knowing its length: a short one would be read past its end.
        std::string bytes = blob;
        size_t expected = memory::desc().get_blob().size();
        if (bytes.size() != expected)
            throw_invalid_argument("desc(blob): the blob has " + std::to_string(bytes.size())
                    + " bytes; one from memory.desc.get_blob() of this oneDNN has "
                    + std::to_string(expected));
        std::vector<uint8_t> data(bytes.begin(), bytes.end());
        memory::desc result(data);
        std::string why = unsound_fields(result.get());
        if (!why.empty())
            throw_invalid_argument(
                    "desc(blob): the blob is not a memory descriptor's (" + why + ")");
        // A packed layout's blocking fields answer no query, and get_size()
        // divides by them: the descriptor desc.packed makes of the same
        // facts stands for it (this build makes packed ones no other way).
        if (result.get_format_kind() == memory::format_kind::sparse
                && result.get_sparse_encoding() == memory::sparse_encoding::packed) {
            memory::desc rebuilt = memory::desc::packed(result.get_dims(), result.get_data_type(),
                    result.get_nnz(), /*allow_empty=*/true);
            if (rebuilt.is_zero() || rebuilt != result)
                throw_invalid_argument(
                        "desc(blob): the blob is not a memory descriptor's (packed)");
            return rebuilt;
        }
        return result;
    }),
            py::arg("blob"),
            "The descriptor saved in `blob` (bytes from get_blob(), of the same "
            "oneDNN build).");
    desc.def("get_blob", [](memory::desc &d) { // oneDNN 3.13 declares it non-const
        auto blob = d.get_blob();
        return py::bytes(reinterpret_cast<const char *>(blob.data()), blob.size());
    }, "The descriptor as bytes, for desc(blob).");
    using dims = memory::dims;
    desc.def_static("csr",
            zero_if_empty<const dims &, dt, memory::dim, dt, dt, bool>(&memory::desc::csr),
            py::arg("dims"), py::arg("data_type"), py::arg("nnz"), py::arg("index_data_type"),
            py::arg("pointer_data_type"), py::arg("allow_empty") = false,
            "Sparse descriptor, CSR encoding: buffers 0 values, 1 column indices, "
            "2 row pointers; `nnz` non-zero values.");
    desc.def_static("coo",
            zero_if_empty<const dims &, dt, memory::dim, dt, bool>(&memory::desc::coo),
            py::arg("dims"), py::arg("data_type"), py::arg("nnz"), py::arg("index_data_type"),
            py::arg("allow_empty") = false,
            "Sparse descriptor, COO encoding: buffer 0 values, buffer 1 + d the "
            "indices along dimension d; `nnz` non-zero values.");
    desc.def_static("packed",
            zero_if_empty<const dims &, dt, memory::dim, bool>(&memory::desc::packed),
            py::arg("dims"), py::arg("data_type"), py::arg("nnz"), py::arg("allow_empty") = false,
            "Sparse descriptor, packed encoding: only for creating a primitive "
            "descriptor, which gives the actual one (like format_tag.any).");
    desc.def_static("host_scalar", &memory::desc::host_scalar, py::arg("data_type"),
            "Descriptor of one `data_type` value held on the host (memory(desc, "
            "value)), e.g. for primitive_attr.set_host_scale.");
    desc.def("get_nnz", &memory::desc::get_nnz,
            "Number of non-zero values of a sparse descriptor (0 otherwise).");
    desc.def("get_num_handles", &memory::desc::get_num_handles,
            "Number of buffers of the layout (1, more for sparse encodings).");
    desc.def("get_padded_offsets", &memory::desc::get_padded_offsets,
            "Per-dimension offsets of the padded area.");
    desc.def("get_sparse_encoding", &memory::desc::get_sparse_encoding,
            "Sparse encoding (undef for dense descriptors).");
    desc.def("get_size", &memory::desc::get_size, py::arg("index") = 0,
            "Size in bytes (of the index-th buffer for multi-buffer layouts, 0 "
            "for an index past them).");
    desc.def("_addressed_bytes",
            [](const memory::desc &d, int index) { return addressed_bytes(d.get(), index); },
            py::arg("index") = 0,
            "Bytes from the handle of buffer `index` that oneDNN's kernels may address: "
            "to the furthest element of a plain layout, from its sub-memory offset on; "
            "get_size() and the offset for other layouts. Storage given for the "
            "descriptor must hold this many.");
    desc.def("get_dims", &memory::desc::get_dims, "Dimensions.");
    desc.def("get_padded_dims", &memory::desc::get_padded_dims, "Padded dimensions.");
    desc.def("get_data_type", &memory::desc::get_data_type, py::arg("index") = 0,
            "Data type (of the index-th buffer for multi-buffer layouts).");
    desc.def("get_ndims", &memory::desc::get_ndims, "Number of dimensions.");
    desc.def("get_strides", &memory::desc::get_strides,
            "Strides in elements (empty unless the layout is blocked).");
    desc.def("get_format_kind", &memory::desc::get_format_kind, "Format kind.");
    desc.def("get_inner_nblks", &memory::desc::get_inner_nblks,
            "Number of inner blocks (0 for plain layouts).");
    desc.def("get_inner_blks", &memory::desc::get_inner_blks, "Inner block sizes.");
    desc.def("get_inner_idxs", &memory::desc::get_inner_idxs,
            "Dimension indices of the inner blocks.");
    desc.def("get_submemory_offset", &memory::desc::get_submemory_offset,
            "Offset of the first element, in elements.");
    desc.def("is_zero", &memory::desc::is_zero, "True for a zero descriptor.");
    desc.def("reshape",
            zero_if_empty<const memory::desc &, const dims &, bool>(&memory::desc::reshape),
            py::arg("dims"), py::arg("allow_empty") = false, "Descriptor with new dimensions.");
    desc.def("permute_axes",
            zero_if_empty<const memory::desc &, const std::vector<int> &, bool>(
                    &memory::desc::permute_axes),
            py::arg("permutation"), py::arg("allow_empty") = false,
            "Descriptor with permuted axes.");
    desc.def("submemory_desc",
            zero_if_empty<const memory::desc &, const dims &, const dims &, bool>(
                    &memory::desc::submemory_desc),
            py::arg("dims"), py::arg("offsets"), py::arg("allow_empty") = false,
            "Descriptor of a sub-tensor of `dims` starting at `offsets`.");
    desc.def("__eq__", [](const memory::desc &a, const memory::desc &b) { return a == b; },
            py::is_operator());
    desc.def("__ne__", [](const memory::desc &a, const memory::desc &b) { return a != b; },
            py::is_operator());
    desc.attr("__hash__") = py::none(); // mutable C handle: equal, not hashable
    desc.def("__repr__", &desc_repr);
}

} // namespace

void bind_memory(py::module_ &m) {
    py::class_<special_handle>(m, "_special_handle",
            "Type of dnnl.MEMORY_ALLOCATE and dnnl.MEMORY_NONE.")
            .def("__repr__", [](const special_handle &h) { return std::string("dnnl.") + h.name; });
    m.attr("MEMORY_ALLOCATE") = memory_allocate;
    // A dimension or stride given at execution (DNNL_RUNTIME_DIM_VAL), and
    // the other runtime placeholders of C++.
    m.attr("RUNTIME_DIM_VAL") = DNNL_RUNTIME_DIM_VAL;
    m.attr("RUNTIME_S32_VAL") = DNNL_RUNTIME_S32_VAL;
    m.attr("RUNTIME_SIZE_VAL") = DNNL_RUNTIME_SIZE_VAL;
    m.attr("MEMORY_NONE") = memory_none;

    py::class_<mapped_data>(m, "_mapped_data",
            "Keeps a memory mapped while NumPy views of the mapping live.");

    py::class_<memory_object> mem(m, "memory",
            "Data on an engine (dnnl::memory). On OpenCL engines, memory made "
            "here is buffer-based; dnnl.ocl_interop.make_memory chooses USM or "
            "buffer.");
    bind_enums(mem);
    bind_desc(mem);

    mem.def(py::init([](const memory::desc &desc, const engine_object &engine, py::handle handle) {
        auto user = memory_handles_from(handle, desc, engine, /*usm=*/false,
                /*accept_mem_object=*/true);
        return memory_object(memory(desc, engine, user.handles), engine, nullptr,
                std::move(user.owners));
    }),
            py::arg("desc"), py::arg("engine"), py::arg("handle") = memory_allocate,
            "Memory for `desc` on `engine`. `handle`: dnnl.MEMORY_ALLOCATE "
            "(oneDNN allocates; the binding does where oneDNN's get_size() bytes "
            "fall short of what `desc` addresses), dnnl.MEMORY_NONE (no storage yet), or the "
            "user's storage: on OpenCL engines a cl_mem (pyopencl memory object "
            "or int), which oneDNN retains and which must hold the bytes `desc` "
            "addresses (desc.get_size(), plus a sub-memory offset; a plain layout up "
            "to its furthest element); a list gives one handle per buffer of a "
            "multi-buffer (sparse) layout.");
    // A number only, so that memory(desc, <not an engine>) fails overload
    // resolution with pybind11's TypeError naming both signatures.
    using number = std::variant<long long, double>;
    mem.def(py::init([](const memory::desc &desc, const number &value) {
        if (desc.get_format_kind() != memory::format_kind::host_scalar)
            throw_invalid_argument(
                    "memory(desc, value): desc must be a host-scalar "
                    "descriptor (memory.desc.host_scalar)");
        auto bytes = host_scalar_bytes(desc.get_data_type(),
                std::visit([](auto v) { return py::object(py::cast(v)); }, value));
        dnnl_memory_t created = nullptr;
        dnnl::error::wrap_c_api(dnnl_memory_create_host_scalar(&created, desc.get(), bytes.data()),
                "could not create a memory object");
        return memory_object(memory(created), engine_object());
    }),
            py::arg("desc"), py::arg("value"),
            "Host-scalar memory holding `value` (a Python number, converted to "
            "the data type of `desc`, a memory.desc.host_scalar descriptor); it "
            "lives on no engine and may be passed to any primitive's execute, "
            "e.g. as the scale of primitive_attr.set_host_scale.");
    mem.def_static("data_type_size", &memory::data_type_size, py::arg("data_type"),
            "Bytes per element of `data_type`, as oneDNN counts them: 1 for the 4-bit "
            "types (the byte two of them share), 2**64-1 for undef.");
    mem.def_static("numpy_dtype",
            [](dt t) -> py::typing::Optional<py::dtype> {
        return py::reinterpret_borrow<py::typing::Optional<py::dtype>>(numpy_dtype(t));
    }, py::arg("data_type"),
            "The NumPy dtype map_data() and dnnl.arrays use for elements of "
            "`data_type` (f16 as float16, bf16 as uint16 bits, f8 and e8m0 as "
            "uint8 bits), or None for sub-byte types (shown as raw bytes).");
    // The data-type table for the package's Python modules (dnnl.arrays):
    // (name, in memory.data_type, in logical_tensor.data_type, bits, NumPy
    // storage dtype name or None, "values" | "bits" | "nothing").
    py::list table;
    for (const auto &r : data_types::table()) {
        const char *holds = r.holds == data_types::numpy_holds::values ? "values"
                : r.holds == data_types::numpy_holds::bits             ? "bits"
                                                                       : "nothing";
        table.append(py::make_tuple(r.name, r.in_memory, r.in_graph, r.bits,
                r.numpy ? py::object(py::str(r.numpy)) : py::object(py::none()), holds));
    }
    m.attr("_data_type_table") = py::tuple(table);
    m.def("_bf16_from_float32",
            [](py::array_t<float, py::array::c_style | py::array::forcecast> values) {
        py::array_t<uint16_t> out(
                std::vector<py::ssize_t>(values.shape(), values.shape() + values.ndim()));
        const float *in = values.data();
        uint16_t *bits = out.mutable_data();
        for (py::ssize_t i = 0; i < values.size(); ++i) bits[i] = data_types::bf16_from_f32(in[i]);
        return out;
    }, py::arg("values"), "bf16 bits (uint16) of float32 values (dnnl.arrays.bf16_from_float32).");
    mem.def("get_desc", [](const memory_object &m) { return m.desc; }, "The memory descriptor.");
    mem.def("get_engine", [](const memory_object &m) -> py::typing::Optional<engine_object> {
        if (m.host_scalar)
            return py::reinterpret_borrow<py::typing::Optional<engine_object>>(py::none());
        return py::cast(m.engine);
    }, "The engine the memory lives on (None for host-scalar memory).");
    mem.def("get_data_handle",
            [](const memory_object &m, int index) {
        check_buffer_index(m, index);
        return reinterpret_cast<uintptr_t>(m.memory.get_data_handle(index));
    }, py::arg("index") = 0,
            "The storage handle of buffer `index` as an int (a USM pointer or a "
            "cl_mem); 0 when none.");
    mem.def("set_data_handle",
            [](memory_object &m, py::handle handle, int index) {
        check_buffer_index(m, index);
        if (m.host_scalar)
            throw_invalid_argument(
                    "set_data_handle(): host-scalar memory holds its value "
                    "(set_host_scalar_value)");
        bool mem_object = false;
        py::object owner;
        void *h = memory_handle_from(handle, "handle", /*accept_mem_object=*/true, &mem_object,
                &owner);
        if (h == DNNL_MEMORY_ALLOCATE)
            throw_invalid_argument(
                    "set_data_handle() takes a handle or "
                    "dnnl.MEMORY_NONE, not dnnl.MEMORY_ALLOCATE");
        check_user_handle(m.desc, m.engine, is_usm(m.memory), h, index, mem_object);
        std::shared_ptr<void> kept = keep_alive(std::move(owner)), replaced;
        {
            // Two threads setting handles of one memory at once (no GIL
            // orders them on a free-threaded Python) may not tear the list;
            // which handle stays is theirs to order, as in C++.
            static std::mutex owners_mutex;
            std::lock_guard<std::mutex> lock(owners_mutex);
            m.memory.set_data_handle(h, index);
            if (m.handle_owners.size() <= static_cast<size_t>(index))
                m.handle_owners.resize(index + 1);
            replaced = std::exchange(m.handle_owners[index], std::move(kept));
        } // `replaced` goes after the lock: its last reference may run Python
    }, py::arg("handle"), py::arg("index") = 0,
            "Point buffer `index` of the memory at other storage of the same "
            "kind (checked to fit the descriptor), or at none with dnnl.MEMORY_NONE. "
            "A typed pointer (dnnl.usm.allocation) is kept alive while the memory "
            "uses it.");
    mem.def("get_host_scalar_value", [](const memory_object &m) {
        if (!m.host_scalar)
            throw_invalid_argument("get_host_scalar_value(): not host-scalar memory");
        std::vector<uint8_t> bytes(m.desc.get_size());
        dnnl::error::wrap_c_api(dnnl_memory_get_host_scalar_value(m.memory.get(), bytes.data()),
                "could not get host scalar value from a memory object");
        return host_scalar_value(m.desc.get_data_type(), bytes);
    }, "The value of host-scalar memory, as a Python number.");
    mem.def("set_host_scalar_value", [](const memory_object &m, py::handle value) {
        if (!m.host_scalar)
            throw_invalid_argument("set_host_scalar_value(): not host-scalar memory");
        auto bytes = host_scalar_bytes(m.desc.get_data_type(), value);
        dnnl::error::wrap_c_api(dnnl_memory_set_host_scalar_value(m.memory.get(), bytes.data()),
                "could not set host scalar value to a memory object");
    }, py::arg("value"), "Set the value of host-scalar memory (converted to its data type).");
    mem.def("map_data",
            [](const memory_object &m, int index) {
        fork_guard::check();
        check_buffer_index(m, index);
        check_mappable(m.memory, m.desc, index, "map_data()");
        void *ptr = nullptr;
        dnnl::memory through = mapping_memory(m);
        {
            py::gil_scoped_release release; // waits for the device
            ptr = through.map_data<void>(index);
        }
        if (!ptr && m.desc.get_size(index) == 0 && addressed_bytes(m.desc.get(), index) != 0)
            throw status_error(dnnl_invalid_arguments,
                    "map_data(): oneDNN maps get_size() bytes, 0 for this layout (its "
                    "strides are all 0), though its storage holds an element: read it "
                    "through a reorder");
        if (!ptr)
            throw status_error(dnnl_invalid_arguments,
                    "map_data(): the memory has no storage to map");
        py::object holder = py::cast(new mapped_data(m, std::move(through), ptr, index),
                py::return_value_policy::take_ownership);
        return mapped_array(m.desc, index, ptr, holder);
    }, py::arg("index") = 0,
            "Map buffer `index` of the memory for host access and return a NumPy "
            "array over the mapping: typed by the data type (f16 as float16, bf16 as "
            "uint16) and shaped and strided by the dims when the layout is plain; "
            "flat and typed for the buffers of a sparse layout, 0-d for host-scalar "
            "memory; otherwise flat uint8 bytes. Writes reach the memory at "
            "unmap_data(), which is also done when the last view of the mapping is "
            "gone. Do not use the array after unmap_data().");
    mem.def("unmap_data",
            [](const memory_object &self, py::handle view, int index) {
        fork_guard::check();
        for (py::handle obj = view; obj && !obj.is_none();
                obj = py::getattr(obj, "base", py::none())) {
            if (py::isinstance<mapped_data>(obj)) {
                auto &mapping = obj.cast<mapped_data &>();
                if (mapping.owner.memory.get() != self.memory.get())
                    throw_invalid_argument("unmap_data(): view maps another memory");
                if (mapping.index != index)
                    throw_invalid_argument("unmap_data(): view maps buffer "
                            + std::to_string(mapping.index) + ", not " + std::to_string(index));
                if (!mapping.mapped) throw_invalid_argument("unmap_data(): already unmapped");
                mapping.unmap();
                return;
            }
            if (!py::isinstance<py::array>(obj)) break;
        }
        throw py::type_error(
                "unmap_data(): view must be an array returned by "
                "map_data() (or a view of one)");
    }, py::arg("view"), py::arg("index") = 0,
            "Unmap a mapping of buffer `index` made by map_data(index), writing "
            "host changes back to the memory.");
}

} // namespace dnnl_ocl_interop
