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

#include <type_traits>
#include <unordered_map>

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
// holds). Used with the GIL held, as every caster is.
template <typename E>
struct members {
    using underlying = std::underlying_type_t<E>;
    PyObject *python_type = nullptr;
    std::unordered_map<PyObject *, E> by_object;
    std::unordered_map<underlying, PyObject *> by_value;

    static members &get() {
        static members *table = new members(); // never destroyed: outlives the interpreter
        if (!table->python_type)
            table->python_type = py::detail::global_internals_native_enum_type_map_get_item(
                    std::type_index(typeid(E)))
                                         .ptr();
        return *table;
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
        if (!table.python_type)
            return type_caster_enum_type<E>::cast(std::forward<SrcType>(src), policy, parent);
        const auto value = static_cast<underlying>(src);
        auto found = table.by_value.find(value);
        if (found == table.by_value.end()) {
            object member
                    = reinterpret_borrow<object>(table.python_type)(value); // ValueError if unknown
            found = table.by_value.emplace(value, member.release().ptr())
                            .first; // kept: see members
        }
        return handle(found->second).inc_ref();
    }
    template <typename SrcType>
    static handle cast(SrcType *src, return_value_policy policy, handle parent) {
        return cast(*src, policy, parent);
    }

    bool load(handle src, bool convert) {
        members &table = members::get();
        if (!table.python_type) return fallback_.load(src, convert);
        auto found = table.by_object.find(src.ptr());
        if (found == table.by_object.end()) {
            if (!isinstance(src, handle(table.python_type))) return false;
            auto value = static_cast<E>(src.attr("value").template cast<underlying>());
            found = table.by_object.emplace(src.inc_ref().ptr(), value).first; // kept alive as key
        }
        value_ = found->second;
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
