#include "common/enum_caster.hpp" // first: see the header

#include "arrays/array_memories.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "arrays/py_names.hpp"
#include "arrays/py_refs.hpp"
#include "common/cl_handles.hpp"
#include "common/errors.hpp"
#include "core/objects.hpp"

namespace py = pybind11;

namespace dnnl_ocl_interop {
namespace array_memories {
namespace {

// One kept memory and what it was made on (the array's attributes then,
// and the memory's handle). Immutable once on a shelf, but for
// memory_object, set once under the shelf's mutex.
struct kept {
    py::object token;
    py::object engine; // held, so that the id() in a token names no other engine
    py::object base, offset, shape, strides, dtype;
    void *handle = nullptr;
    dnnl::memory memory;
    py::object memory_object; // its dnnl.memory; made on first ask for memory made in C++
};

// An array's memories (oldest first) and where its bytes live. Threads
// using one array at once (no GIL on a free-threaded Python) share its
// shelf: the mutex guards every member and is held for no Python call
// (items are shared_ptrs, copied out under it, compared and dropped
// outside it).
struct shelf {
    std::mutex lock;
    std::vector<std::shared_ptr<kept>> items;
    py::object storage_base; // the base_data `where` was found for
    storage where {};

    std::vector<std::shared_ptr<kept>> snapshot() {
        std::lock_guard<std::mutex> guard(lock);
        return items;
    }
};

const char *const capsule_name = "dnnl_ocl_interop.array_memories";

void drop_shelf(PyObject *capsule) {
    delete static_cast<shelf *>(PyCapsule_GetPointer(capsule, capsule_name));
}

// The array's attribute dictionary (new reference), or nullptr (nothing
// raised) for an object without one.
PyObject *dict_of(PyObject *array) {
    PyObject *dict = PyObject_GenericGetDict(array, nullptr);
    if (!dict) PyErr_Clear();
    return dict;
}

// The shelf held by `capsule` (a borrowed or new reference the caller
// holds), or nullptr for another object under the name.
shelf *shelf_held(PyObject *capsule) {
    auto *found = static_cast<shelf *>(PyCapsule_GetPointer(capsule, capsule_name));
    if (!found) PyErr_Clear(); // another object under the name: as if none
    return found;
}

// (The shelf stays while the caller holds the array: its dictionary holds
// the capsule, which nothing but a user's own del removes.)
shelf *shelf_in(PyObject *dict) {
    py::object capsule = py_refs::dict_get(dict, names().shelf);
    return capsule ? shelf_held(capsule.ptr()) : nullptr;
}

shelf *shelf_of(py::handle array, bool make) {
    py::object dict = py::reinterpret_steal<py::object>(dict_of(array.ptr()));
    if (!dict) return nullptr;
    shelf *found = shelf_in(dict.ptr());
    if (found || !make) return found;
    auto *made = new shelf();
    PyObject *capsule = PyCapsule_New(made, capsule_name, drop_shelf);
    if (!capsule) {
        delete made;
        throw py::error_already_set();
    }
    // One dict operation: of two threads making a shelf at once, both use
    // the one that went in first (the other's capsule, empty, is dropped).
    py::object in_dict = py_refs::dict_set_default(dict.ptr(), names().shelf, capsule);
    Py_DECREF(capsule);
    return shelf_held(in_dict.ptr());
}

using py_refs::attribute;

bool same(PyObject *a, PyObject *b) {
    if (a == b) return true;
    int equal = PyObject_RichCompareBool(a, b, Py_EQ);
    if (equal < 0) throw py::error_already_set();
    return equal == 1;
}

// Whether `k` was made on what `array` holds now, and its memory still
// points there (a set_data_handle on it is noticed).
bool still_valid(const kept &k, PyObject *array) {
    const auto &n = names();
    return attribute(array, n.base_data).ptr() == k.base.ptr()
            && same(attribute(array, n.offset).ptr(), k.offset.ptr())
            && same(attribute(array, n.shape).ptr(), k.shape.ptr())
            && same(attribute(array, n.strides).ptr(), k.strides.ptr())
            && same(attribute(array, n.dtype).ptr(), k.dtype.ptr())
            && k.memory.get_data_handle() == k.handle;
}

std::shared_ptr<kept> valid_item(PyObject *array, PyObject *token, PyObject *engine,
        shelf **on = nullptr) {
    py::object dict = py::reinterpret_steal<py::object>(dict_of(array));
    if (!dict) return nullptr;
    shelf *s = shelf_in(dict.ptr());
    if (!s) return nullptr;
    if (on) *on = s;
    for (auto &k : s->snapshot())
        if (k->engine.ptr() == engine && same(k->token.ptr(), token))
            return still_valid(*k, array) ? k : nullptr;
    return nullptr;
}

void put(py::handle array, kept k) {
    const auto &n = names();
    k.base = attribute(array.ptr(), n.base_data);
    k.offset = attribute(array.ptr(), n.offset);
    k.shape = attribute(array.ptr(), n.shape);
    k.strides = attribute(array.ptr(), n.strides);
    k.dtype = attribute(array.ptr(), n.dtype);
    k.handle = k.memory.get_data_handle();
    shelf *s = shelf_of(array, /*make=*/true);
    if (!s) return; // an array type without __dict__: nothing kept
    auto made = std::make_shared<kept>(std::move(k));
    std::shared_ptr<kept> replaced; // compared outside the lock
    for (auto &item : s->snapshot())
        if (item->engine.ptr() == made->engine.ptr()
                && same(item->token.ptr(), made->token.ptr())) {
            replaced = item;
            break;
        }
    std::shared_ptr<kept> dropped; // released after the lock (its Python references)
    {
        std::lock_guard<std::mutex> guard(s->lock);
        auto &items = s->items;
        auto at = replaced ? std::find(items.begin(), items.end(), replaced) : items.end();
        if (at != items.end()) {
            dropped = std::exchange(*at, std::move(made));
        } else {
            if (items.size() >= per_array) {
                dropped = std::move(items.front());
                items.erase(items.begin());
            }
            items.push_back(std::move(made));
        }
    }
}

} // namespace

bool find(PyObject *array, PyObject *token, PyObject *engine, dnnl::memory &found) {
    std::shared_ptr<kept> k = valid_item(array, token, engine);
    if (!k) return false;
    found = k->memory;
    return true;
}

py::object find_object(py::handle array, py::handle token, py::handle engine) {
    shelf *s = nullptr;
    std::shared_ptr<kept> k = valid_item(array.ptr(), token.ptr(), engine.ptr(), &s);
    if (!k) return py::none();
    {
        std::lock_guard<std::mutex> guard(s->lock);
        if (k->memory_object) return k->memory_object;
    }
    // Made outside the lock; of two threads making it at once, the first kept wins.
    py::object made = py::cast(memory_object(k->memory, k->engine.cast<engine_object>()));
    std::lock_guard<std::mutex> guard(s->lock);
    if (!k->memory_object) k->memory_object = made;
    return k->memory_object; // (`made`, if it lost, is released after the lock)
}

void keep(py::handle array, py::object token, py::object engine, py::object memory) {
    kept k;
    k.memory = memory.cast<const memory_object &>().memory;
    k.memory_object = std::move(memory);
    k.token = std::move(token);
    k.engine = std::move(engine);
    put(array, std::move(k));
}

void keep_made(py::handle array, py::object token, py::object engine, dnnl::memory memory) {
    kept k;
    k.memory = std::move(memory);
    k.token = std::move(token);
    k.engine = std::move(engine);
    put(array, std::move(k));
}

storage storage_of(py::handle array) {
    py::object base = attribute(array.ptr(), names().base_data);
    shelf *s = shelf_of(array, /*make=*/true);
    py::object earlier_base; // released after the lock
    if (s) {
        std::lock_guard<std::mutex> guard(s->lock);
        if (s->storage_base.ptr() == base.ptr()) return s->where;
    }
    storage where {reinterpret_cast<uintptr_t>(base.ptr()), 0};
    if (cl_handles::is_mem_object(base)) {
        cl_mem mem = cl_handles::to_mem(base, "base_data");
        cl_mem parent = nullptr;
        check_cl(clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent), &parent,
                         nullptr),
                "clGetMemObjectInfo(CL_MEM_ASSOCIATED_MEMOBJECT)");
        size_t origin = 0;
        if (parent)
            check_cl(clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof(origin), &origin, nullptr),
                    "clGetMemObjectInfo(CL_MEM_OFFSET)");
        where = {reinterpret_cast<uintptr_t>(parent ? parent : mem), origin};
    }
    if (s) {
        std::lock_guard<std::mutex> guard(s->lock);
        earlier_base = std::exchange(s->storage_base, base);
        s->where = where;
    }
    return where;
}

void bind(py::module_ &m) {
    m.attr("MEMORIES_PER_ARRAY") = per_array;
    m.def("kept_memory", &find_object, py::arg("array"), py::arg("token"), py::arg("engine"),
            "The dnnl.memory kept on `array` for `token` (an engine's and a descriptor's key) "
            "and made on `engine`, while the array's base_data, offset, shape, strides and dtype "
            "and the memory's handle are those it was made on; None otherwise.");
    m.def("keep_memory", &keep, py::arg("array"), py::arg("token"), py::arg("engine"),
            py::arg("memory"),
            "Keep `memory` (on `array`'s storage, made on `engine`) on `array` under `token`; "
            "the oldest of more than MEMORIES_PER_ARRAY goes.");
    m.def("storage_of",
            [](py::handle array) {
        storage where = storage_of(array);
        return py::make_tuple(where.root, where.origin);
    }, py::arg("array"),
            "(root, origin): the cl_mem handle holding `array`'s bytes (its base_data, or the "
            "parent of a sub-buffer) and where base_data starts in it (bytes); for storage that "
            "is no cl_mem, the storage object's id() and 0. Kept on the array while its "
            "base_data is the same object.");
}

} // namespace array_memories
} // namespace dnnl_ocl_interop
