"""Every public name of the package has a docstring that says something
beyond its signature (pybind11 writes the signature into __doc__)."""

import enum
import inspect
import re
import types

import dnnl_ocl_interop as dnnl

MODULES = [dnnl, dnnl.ocl_interop, dnnl.graph, dnnl.graph.ocl_interop, dnnl.graph.allocators,
           dnnl.graph.patterns,
           dnnl.usm, dnnl.arrays, dnnl.cache, dnnl.emulation, dnnl.ops, dnnl.profiling]

# A pybind11 signature line, the overload header, or an overload number.
_SIGNATURE = re.compile(r"^\s*(\d+\.\s*)?[\w.]+\(.*\)( -> .*)?$|^Overloaded function\.$")


def _prose(doc):
    """The docstring without pybind11's signature lines."""
    if not doc:
        return ""
    return "\n".join(line for line in doc.splitlines() if not _SIGNATURE.match(line)).strip()


def _documented_objects():
    """(qualified name, object) of every public function, class, method and
    property reachable from the package's modules."""
    seen = set()
    for module in MODULES:
        yield module.__name__, module
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or id(obj) in seen:
                continue
            if not (callable(obj) or isinstance(obj, type)):
                continue  # constants: ARG_* ints, special handles
            seen.add(id(obj))
            yield f"{module.__name__}.{name}", obj
            if isinstance(obj, type):
                yield from _members(f"{module.__name__}.{name}", obj, seen)


def _members(prefix, cls, seen):
    if issubclass(cls, enum.Enum):
        return  # values carry the enum's docstring
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue  # constructors are documented by their class's docstring
        if isinstance(member, type):
            if id(member) in seen:
                continue
            seen.add(id(member))
            yield f"{prefix}.{name}", member
            yield from _members(f"{prefix}.{name}", member, seen)
        elif isinstance(member, (property, staticmethod, classmethod)) or callable(member) \
                or inspect.isdatadescriptor(member):
            yield f"{prefix}.{name}", member


def test_every_public_name_has_a_docstring():
    missing = [name for name, obj in _documented_objects()
               if not _prose(getattr(obj, "__doc__", None))]
    assert not missing, f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)


def test_the_walk_reaches_the_api():
    names = {name for name, _ in _documented_objects()}
    for expected in ["dnnl_ocl_interop.ocl_interop.make_engine", "dnnl_ocl_interop.memory.desc",
                     "dnnl_ocl_interop.matmul.primitive_desc", "dnnl_ocl_interop.usm.allocation",
                     "dnnl_ocl_interop.graph.ocl_interop.make_allocator",
                     "dnnl_ocl_interop.memory.get_desc"]:
        assert expected in names
    assert len(names) > 200
