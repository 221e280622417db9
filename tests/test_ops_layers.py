"""dnnl.ops is laid out in layers (ops/__init__.py lists them): every import
between its modules points down, so there is no import circle, not even
one closed by an import inside a function. Read from the sources with ast,
every import anywhere in a module (inside functions and TYPE_CHECKING
blocks too); nothing is imported."""

import ast
import pathlib

PACKAGE = "dnnl_ocl_interop"
OPS = pathlib.Path(__file__).resolve().parents[1] / "python" / PACKAGE / "ops"


def _modules(folder):
    """{module name within ops ("__init__", "_run", ...): parsed source}."""
    return {path.stem: ast.parse(path.read_text(), str(path)) for path in sorted(folder.glob("*.py"))}


def _imported(name, tree, modules):
    """The modules of ops/ that module `name` imports (a name of the
    package that is no module of it is its __init__'s)."""
    found = set()

    def target(parts):
        # parts: the dotted path below dnnl_ocl_interop.ops ([] is the package)
        if not parts:
            return "__init__"
        return parts[0] if parts[0] in modules else "__init__"

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                below = node.module.split(".") if node.module else []
            elif node.level == 2 and node.module and node.module.split(".")[0] == "ops":
                below = node.module.split(".")[1:]
            elif node.level == 0 and node.module and node.module.startswith(PACKAGE + ".ops"):
                below = node.module.split(".")[2:]
            else:
                continue
            if below:
                found.add(target(below))
            else:  # from . import a, b: each a module of ops, or a name of its __init__
                found.update(target([alias.name]) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + ".ops"):
                    found.add(target(alias.name.split(".")[2:]))
    found.discard(name)
    return found


def import_circles(folder):
    """Every import circle among the modules in `folder` (each a list of
    module names, its first repeated at its end)."""
    modules = _modules(folder)
    graph = {name: _imported(name, tree, modules) for name, tree in modules.items()}
    circles, done = [], set()

    def visit(name, path):
        if name in path:
            circles.append(path[path.index(name):] + [name])
            return
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, path + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return circles


def test_ops_has_no_import_circle():
    assert import_circles(OPS) == []


def test_a_circle_is_found(tmp_path):
    """The check finds a circle closed by an import inside a function, and
    one through the package's __init__; none where imports point down."""
    (tmp_path / "__init__.py").write_text("from . import _top\nfrom ._bottom import base\n")
    (tmp_path / "_bottom.py").write_text("base = 1\n")
    (tmp_path / "_top.py").write_text("from ._bottom import base\n")
    assert import_circles(tmp_path) == []
    (tmp_path / "_bottom.py").write_text("def lazy():\n    from . import _top\n")
    assert import_circles(tmp_path) == [["_bottom", "_top", "_bottom"]]
    (tmp_path / "_bottom.py").write_text("from . import operation\n")
    assert import_circles(tmp_path) == [["__init__", "_bottom", "__init__"]]


def test_ops_takes_no_private_name_of_arrays():
    """The memory-on-array cache is its own module (_array_memory), which
    dnnl.arrays and dnnl.ops both import: ops takes no private name of
    arrays."""
    taken = []
    for name, tree in _modules(OPS).items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "arrays" and node.attr.startswith("_")):
                taken.append(f"{name}: arrays.{node.attr}")
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[-1] == "arrays"):
                taken += [f"{name}: {alias.name}" for alias in node.names if alias.name.startswith("_")]
    assert taken == []
