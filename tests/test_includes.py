"""The C++ includes run one way, down the rooms docs/building.md's layout
map orders (``common/`` < ``core/`` < the namespaces < ``module.cpp``): a
room includes only itself and the rooms below it. The order is read from
the map, its one home."""

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
