// Conversion of every C++ enum bound with py::native_enum, without Python
// code on the hot path.
//
// pybind11's own caster reads `member.value` (a Python-level property, two
// frames) for each enum argument and calls the enum class (Enum.__call__)
// for each enum it returns: 0.2 and 0.6 µs on the benchmark machine, a third
// of a get_memory_kind() call. Enum members are singletons, so this caster
// remembers each member it has met: an argument is found by identity, a
// result by value, and Python is asked only the first time.
//
// Every unit of the module that reaches pybind11 includes this header
// first (tests/test_includes.py checks it), so that no unit instantiates
// pybind11's own caster for an enum another unit converts with this one (two
// definitions of one specialization). Within a unit the compiler enforces
// the order: a caster instantiated before this specialization is an error.
//
// It reaches into pybind11's detail:: namespace (type_caster_enum_type,
// type_caster_enum_type_enabled, global_internals_native_enum_type_map_get_item),
// which pybind11 may change in any release: it is pinned below to the
// releases it was built and tested with. For another release, build the
// suite against it (tests/test_bad_input.py has the caster's tests) and widen
// the range.
#pragma once

#include <atomic>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <pybind11/pybind11.h>

// pybind11 3.0.0 to 3.1.x: 3.1.0 builds and passes the suite; 3.0.1 compiles
// this header and the units that convert enums.
static_assert(PYBIND11_VERSION_HEX >= 0x03000000 && PYBIND11_VERSION_HEX < 0x03020000,
        "common/enum_caster.hpp uses pybind11's detail:: namespace and is verified with pybind11 "
        "3.0 and 3.1 only: check it against this release, then widen the range");

namespace dnnl_ocl_interop {
namespace enum_caster_detail {

namespace py = pybind11;

// The Python enum class of E and the members met so far, kept for the life
// of the process (members live as long as their class, which the module
// holds). Every conversion reads them, from any number of threads at once
// with no GIL to order them on a free-threaded Python: a conversion that
// meets a new member copies what is known, adds it and publishes the copy
// (under `adding`, held for no Python call); readers take the current copy
// with one acquire load. Copies replaced stay (a reader may hold one): as
// many as the members met, a few per enum.
template <typename E>
struct members {
    using underlying = std::underlying_type_t<E>;
    struct known_t {
        std::unordered_map<PyObject *, E> by_object;
        std::unordered_map<underlying, PyObject *> by_value;
    };
    std::atomic<PyObject *> python_type {nullptr};
    std::atomic<const known_t *> known {new known_t()};
    std::mutex adding;
    std::vector<const known_t *> replaced;

    static members &get() {
        static members *table = new members(); // never destroyed: outlives the interpreter
        if (!table->python_type.load(std::memory_order_acquire))
            table->python_type.store(py::detail::global_internals_native_enum_type_map_get_item(
                                             std::type_index(typeid(E)))
                                             .ptr(),
                    std::memory_order_release);
        return *table;
    }

    // `object` (a new reference, kept) is a member of `value`; returns the
    // member known for `value` now (the one another thread added first, if
    // any: then `object` is not kept).
    PyObject *add(PyObject *object, E value) {
        std::lock_guard<std::mutex> lock(adding);
        const known_t *old = known.load(std::memory_order_acquire);
        auto found = old->by_value.find(static_cast<underlying>(value));
        if (found != old->by_value.end()) {
            Py_DECREF(object); // a member: its class holds it, no finalizer runs here
            return found->second;
        }
        auto *now = new known_t(*old);
        now->by_object.emplace(object, value);
        now->by_value.emplace(static_cast<underlying>(value), object);
        replaced.push_back(old);
        known.store(now, std::memory_order_release);
        return object;
    }
};

} // namespace enum_caster_detail
} // namespace dnnl_ocl_interop

namespace pybind11 {
namespace detail {

template <typename E>
struct type_caster_enum_type_enabled<E, enable_if_t<std::is_enum<E>::value>> : std::false_type {};

template <typename E>
class type_caster<E, enable_if_t<std::is_enum<E>::value>> {
    using members = dnnl_ocl_interop::enum_caster_detail::members<E>;
    using underlying = std::underlying_type_t<E>;
    // An enum bound with py::enum_ (none is, today) or not at all keeps
    // pybind11's conversion.
    type_caster_enum_type<E> fallback_;
    E value_ {};
    bool native_ = false;

public:
    static constexpr auto name = const_name<E>();

    template <typename SrcType>
    static handle cast(SrcType &&src, return_value_policy policy, handle parent) {
        members &table = members::get();
        PyObject *python_type = table.python_type.load(std::memory_order_acquire);
        if (!python_type)
            return type_caster_enum_type<E>::cast(std::forward<SrcType>(src), policy, parent);
        const auto value = static_cast<underlying>(src);
        const auto &known = *table.known.load(std::memory_order_acquire);
        auto found = known.by_value.find(value);
        if (found != known.by_value.end()) return handle(found->second).inc_ref();
        object member = reinterpret_borrow<object>(python_type)(value); // ValueError if unknown
        return handle(table.add(member.release().ptr(), static_cast<E>(value))).inc_ref();
    }
    template <typename SrcType>
    static handle cast(SrcType *src, return_value_policy policy, handle parent) {
        return cast(*src, policy, parent);
    }

    bool load(handle src, bool convert) {
        members &table = members::get();
        PyObject *python_type = table.python_type.load(std::memory_order_acquire);
        if (!python_type) return fallback_.load(src, convert);
        const auto &known = *table.known.load(std::memory_order_acquire);
        auto found = known.by_object.find(src.ptr());
        if (found != known.by_object.end()) {
            value_ = found->second;
        } else {
            if (!isinstance(src, handle(python_type))) return false;
            value_ = static_cast<E>(src.attr("value").template cast<underlying>());
            table.add(src.inc_ref().ptr(), value_); // kept alive as a key
        }
        native_ = true;
        return true;
    }

    template <typename T>
    using cast_op_type = detail::cast_op_type<T>;
    // NOLINTNEXTLINE(google-explicit-constructor)
    operator E *() { return native_ ? &value_ : static_cast<E *>(fallback_); }
    // NOLINTNEXTLINE(google-explicit-constructor)
    operator E &() { return native_ ? value_ : static_cast<E &>(fallback_); }
};

} // namespace detail
} // namespace pybind11
