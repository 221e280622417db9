"""The C++ includes run one way, down the rooms docs/building.md's layout
map orders (``interpose/`` < ``common/`` < ``core/`` < the namespaces <
``module.cpp``): a room includes only itself and the rooms below it. The
order is read from the map, its one home. And every unit of the module
that reaches pybind11 includes the enum caster first, visibly."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPP = ROOT / "cpp"

# The emulation layer is a library of its own (loaded by the ICD loader):
# it includes nothing of the module, and the module nothing of it, but the
# one header of the question it answers beyond OpenCL's (a constant, no
# code), which both sides share.
ISLANDS = {"emulation"}
SHARED_WITH_ISLANDS = {"common/emulation_query.hpp"}


def room_ranks():
    """{room: rank} from the layout map's sentence "`a/` < `b/` < {`c/`, `d/`}
    < `module.cpp`": rooms of one rank may not include each other."""
    text = " ".join((ROOT / "docs" / "building.md").read_text().split())
    match = re.search(r"down: ((?:`[\w.]+/?`|\{[^}]*\})(?: < (?:`[\w.]+/?`|\{[^}]*\}))+)", text)
    assert match, "docs/building.md no longer says the rooms' order (\"down: `common/` < ...\")"
    ranks = {}
    for rank, step in enumerate(match.group(1).split(" < ")):
        for name in re.findall(r"`([\w.]+?)/?`", step):
            ranks[name] = rank
    return ranks


def room_of(path: Path) -> str:
    relative = path.relative_to(CPP)
    return relative.parts[0] if len(relative.parts) > 1 else relative.name


def project_includes(path: Path):
    """(line number, included path) of each #include "room/file" in `path`."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if match and "/" in match.group(1) and (CPP / match.group(1)).exists():
            yield number, match.group(1)


def arrows_up(ranks):
    wrong = []
    for path in sorted(CPP.rglob("*")):
        if path.suffix not in (".cpp", ".hpp"):
            continue
        source = room_of(path)
        for number, included in project_includes(path):
            target = included.split("/")[0]
            where = f"{path.relative_to(ROOT)}:{number} includes {included}"
            if included in SHARED_WITH_ISLANDS:
                continue
            if source in ISLANDS or target in ISLANDS:
                if source != target:
                    wrong.append(f"{where} (the emulation layer is a library of its own)")
            elif source not in ranks or target not in ranks:
                wrong.append(f"{where} (a room the layout map does not order)")
            elif source != target and ranks[target] >= ranks[source]:
                wrong.append(f"{where} ({target}/ is not below {source}/)")
    return wrong


def test_the_layout_map_orders_every_room():
    ranks = room_ranks()
    rooms = {p.name for p in CPP.iterdir() if p.is_dir()} - ISLANDS
    assert rooms <= set(ranks), f"rooms the layout map does not order: {sorted(rooms - set(ranks))}"
    assert ranks["common"] < ranks["core"] < ranks["graph"] == ranks["ocl_interop"] < ranks["module.cpp"]


def test_every_include_runs_down():
    assert arrows_up(room_ranks()) == []


def test_an_include_up_is_found(tmp_path, monkeypatch):
    # the check itself: a core/ file including ocl_interop/ is an arrow up
    ranks = room_ranks()
    source = CPP / "core" / "objects.hpp"
    text = source.read_text()
    fake = tmp_path / "cpp"
    (fake / "core").mkdir(parents=True)
    (fake / "ocl_interop").mkdir()
    (fake / "ocl_interop" / "ocl_bindings.hpp").write_text("#pragma once\n")
    (fake / "core" / "objects.hpp").write_text('#include "ocl_interop/ocl_bindings.hpp"\n' + text)
    monkeypatch.setattr(sys.modules[__name__], "CPP", fake)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert arrows_up(ranks) == [
        "cpp/core/objects.hpp:1 includes ocl_interop/ocl_bindings.hpp (ocl_interop/ is not below core/)"]


def reaches_pybind11(path: Path, seen=None) -> bool:
    """Whether `path` includes a pybind11 header, itself or through the
    module's headers."""
    seen = set() if seen is None else seen
    seen.add(path)
    for line in path.read_text().splitlines():
        match = re.match(r'\s*#\s*include\s+[<"]([^>"]+)[>"]', line)
        if not match:
            continue
        included = match.group(1)
        if included.startswith("pybind11/"):
            return True
        header = CPP / included
        if header.exists() and header not in seen and reaches_pybind11(header, seen):
            return True
    return False


def first_include(path: Path):
    for line in path.read_text().splitlines():
        match = re.match(r'\s*#\s*include\s+[<"]([^>"]+)[>"]', line)
        if match:
            return match.group(1)


def units_without_the_enum_caster_first():
    """The module's units that reach pybind11 and do not include
    common/enum_caster.hpp first (every enum converted by the one caster: see
    the header; no compiler flag includes it for them)."""
    return [str(path.relative_to(ROOT)) for path in sorted(CPP.rglob("*.cpp"))
            if room_of(path) not in ISLANDS and reaches_pybind11(path)
            and first_include(path) != "common/enum_caster.hpp"]


def test_every_unit_includes_the_enum_caster_first():
    assert units_without_the_enum_caster_first() == []
    # and no hidden flag does it for them
    assert "enum_caster" not in (ROOT / "CMakeLists.txt").read_text()


def test_a_unit_without_the_enum_caster_is_found(tmp_path, monkeypatch):
    fake = tmp_path / "cpp"
    (fake / "core").mkdir(parents=True)
    (fake / "core" / "engine.cpp").write_text("#include <pybind11/pybind11.h>\n")
    (fake / "core" / "plain.cpp").write_text("#include <vector>\n")  # no pybind11: not needed
    monkeypatch.setattr(sys.modules[__name__], "CPP", fake)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert units_without_the_enum_caster_first() == ["cpp/core/engine.cpp"]
