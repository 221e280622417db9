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
// CMake force-includes this header into every translation unit of the
// module (-include), so no unit can instantiate pybind11's caster for an
// enum another unit converts with this one.
#pragma once

#include <type_traits>
#include <unordered_map>

#include <pybind11/pybind11.h>

namespace dnnl_ocl_interop {
namespace enum_caster_detail {

namespace py = pybind11;

// The Python enum class of E and the members met so far, kept for the life
// of the process (members live as long as their class, which the module
// holds). Used with the GIL held, as every caster is.
template <typename E> struct members {
    using underlying = std::underlying_type_t<E>;
    PyObject *python_type = nullptr;
    std::unordered_map<PyObject *, E> by_object;
    std::unordered_map<underlying, PyObject *> by_value;

    static members &get() {
        static members *table = new members(); // never destroyed: outlives the interpreter
        if (!table->python_type)
            table->python_type
                    = py::detail::global_internals_native_enum_type_map_get_item(std::type_index(typeid(E)))
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

    template <typename SrcType> static handle cast(SrcType &&src, return_value_policy policy, handle parent) {
        members &table = members::get();
        if (!table.python_type)
            return type_caster_enum_type<E>::cast(std::forward<SrcType>(src), policy, parent);
        const auto value = static_cast<underlying>(src);
        auto found = table.by_value.find(value);
        if (found == table.by_value.end()) {
            object member = reinterpret_borrow<object>(table.python_type)(value); // ValueError if unknown
            found = table.by_value.emplace(value, member.release().ptr()).first; // kept: see members
        }
        return handle(found->second).inc_ref();
    }
    template <typename SrcType> static handle cast(SrcType *src, return_value_policy policy, handle parent) {
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

    template <typename T> using cast_op_type = detail::cast_op_type<T>;
    // NOLINTNEXTLINE(google-explicit-constructor)
    operator E *() { return native_ ? &value_ : static_cast<E *>(fallback_); }
    // NOLINTNEXTLINE(google-explicit-constructor)
    operator E &() { return native_ ? value_ : static_cast<E &>(fallback_); }
};

} // namespace detail
} // namespace pybind11
