"""Lists the values of oneDNN's C++ enums, read from the headers at build time.

The binding registers every value the headers of the oneDNN it is built
against declare, whatever that version adds or removes: CMake runs this
script at configure time (third_party/onednn.cmake) and the module includes
the lists it writes. Nothing of oneDNN's text is kept in the repository.

    python3 third_party/onednn_headers.py --include DIR --out DIR

For each enum of ENUMS, ``onednn_enum_<name>.inc`` holds one ``VALUE(member)``
line per member in the header's order, with the header's own ``#if`` /
``#ifdef`` / ``#else`` / ``#endif`` lines around members kept (the module
includes the headers too, so the same members are seen). A binding expands it
between a ``py::native_enum`` and its ``.finalize()``. Files are rewritten only
when their content changes, so rebuilds stay incremental.

Only the standard library is used: this runs inside pip's isolated build
environment too.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# Output name -> (header under oneapi/dnnl/, qualified C++ name). The scopes
# are namespaces, structs and classes, as the headers nest them.
ENUMS = {
    # dnnl::graph::status: dnnl::status's members and the graph API's.
    "status": ("dnnl_graph.hpp", "dnnl::graph::status"),
    "engine_kind": ("dnnl_common.hpp", "dnnl::engine::kind"),
    "stream_flags": ("dnnl_common.hpp", "dnnl::stream::flags"),
    "fpmath_mode": ("dnnl_common.hpp", "dnnl::fpmath_mode"),
    "accumulation_mode": ("dnnl_common.hpp", "dnnl::accumulation_mode"),
    "primitive_kind": ("dnnl.hpp", "dnnl::primitive::kind"),
    "scratchpad_mode": ("dnnl.hpp", "dnnl::scratchpad_mode"),
    "rounding_mode": ("dnnl.hpp", "dnnl::rounding_mode"),
    "quantization_mode": ("dnnl.hpp", "dnnl::quantization_mode"),
    "prop_kind": ("dnnl.hpp", "dnnl::prop_kind"),
    "algorithm": ("dnnl.hpp", "dnnl::algorithm"),
    "normalization_flags": ("dnnl.hpp", "dnnl::normalization_flags"),
    "rnn_flags": ("dnnl.hpp", "dnnl::rnn_flags"),
    "rnn_direction": ("dnnl.hpp", "dnnl::rnn_direction"),
    "query": ("dnnl.hpp", "dnnl::query"),
    "memory_data_type": ("dnnl.hpp", "dnnl::memory::data_type"),
    "format_kind": ("dnnl.hpp", "dnnl::memory::format_kind"),
    "sparse_encoding": ("dnnl.hpp", "dnnl::memory::sparse_encoding"),
    "format_tag": ("dnnl.hpp", "dnnl::memory::format_tag"),
    "ocl_memory_kind": ("dnnl_ocl.hpp", "dnnl::ocl_interop::memory_kind"),
    "graph_data_type": ("dnnl_graph.hpp", "dnnl::graph::logical_tensor::data_type"),
    "layout_type": ("dnnl_graph.hpp", "dnnl::graph::logical_tensor::layout_type"),
    "property_type": ("dnnl_graph.hpp", "dnnl::graph::logical_tensor::property_type"),
    "op_kind": ("dnnl_graph.hpp", "dnnl::graph::op::kind"),
    "op_attr": ("dnnl_graph.hpp", "dnnl::graph::op::attr"),
    "partition_policy": ("dnnl_graph.hpp", "dnnl::graph::partition::policy"),
    "graph_dump_mode": ("dnnl_graph.hpp", "dnnl::graph::graph_dump_mode"),
}

# Members that are not values but sentinels after the last one (the headers
# say so; tools/api_coverage_exclusions.txt lists them too).
SENTINELS = {"format_tag": {"format_tag_last"}, "op_kind": {"LastSymbol"}, "op_attr": {"end"}}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SCOPE = re.compile(r"\b(?:namespace|struct|class)\s+(\w+)[^;{}()]*$")
_ENUM = re.compile(r"\benum\s+class\s+(\w+)\s*(?::\s*[\w:\s]+)?$")
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")


class HeaderError(RuntimeError):
    """An enum was not found, or its body could not be read."""


def _strip_comments(text: str) -> str:
    """Comments blanked out, newlines kept (so directives stay on their lines)."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def enums_of(text: str) -> dict[str, list[str]]:
    """Every ``enum class`` of a header: qualified name -> body lines (members
    and preprocessor directives, comments removed)."""
    text = _strip_comments(text)
    found: dict[str, list[str]] = {}
    scope: list[str | None] = []
    pos = 0
    while True:
        brace = re.compile(r"[{}]").search(text, pos)
        if not brace:
            return found
        if brace.group(0) == "}":
            if scope:
                scope.pop()
            pos = brace.end()
            continue
        # What stands before this brace, back to the previous statement.
        start = max(text.rfind(";", 0, brace.start()), text.rfind("}", 0, brace.start()),
                    text.rfind("{", 0, brace.start()))
        head = " ".join(line for line in text[start + 1:brace.start()].splitlines()
                        if not line.lstrip().startswith("#")).strip()
        enum = _ENUM.search(head)
        if enum:
            end = text.index("}", brace.end())
            path = "::".join(name for name in scope if name) + "::" + enum.group(1)
            found[path] = text[brace.end():end].splitlines()
            pos = end + 1
            continue
        named = _SCOPE.search(head)
        scope.append(named.group(1) if named else None)
        pos = brace.end()


def members(body: list[str], sentinels: set[str] = frozenset()) -> list[str]:
    """The .inc lines of an enum body: VALUE(member) per member (`sentinels`
    left out), directives kept."""
    lines: list[str] = []
    pending = ""
    for raw in body:
        if _DIRECTIVE.match(raw):
            lines.append(raw.strip())
            continue
        pending += " " + raw
        *complete, pending = pending.split(",")
        for entry in complete:
            name = entry.split("=")[0].strip()
            if name and name not in sentinels:
                if not re.fullmatch(r"[A-Za-z_]\w*", name):
                    raise HeaderError(f"cannot read enum member {entry.strip()!r}")
                lines.append(f"VALUE({name})")
    last = pending.split("=")[0].strip()
    if last and last not in sentinels:
        lines.append(f"VALUE({last})")
    return lines


def write_if_changed(path: Path, content: str) -> None:
    if not path.exists() or path.read_text() != content:
        path.write_text(content)


def generate(include: Path, out: Path) -> None:
    headers: dict[str, dict[str, list[str]]] = {}
    out.mkdir(parents=True, exist_ok=True)
    for name, (header, qualified) in ENUMS.items():
        if header not in headers:
            path = include / "oneapi" / "dnnl" / header
            try:
                headers[header] = enums_of(path.read_text())
            except OSError as exc:
                raise HeaderError(f"cannot read {path}: {exc}") from exc
        body = headers[header].get(qualified)
        if body is None:
            raise HeaderError(f"no enum {qualified} in {include}/oneapi/dnnl/{header}")
        content = (f"// Generated by third_party/onednn_headers.py: the members of {qualified}\n"
                   f"// in {header} of the oneDNN this module is built against.\n"
                   + "\n".join(members(body, SENTINELS.get(name, set()))) + "\n")
        write_if_changed(out / f"onednn_enum_{name}.inc", content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--include", type=Path, required=True,
                        help="oneDNN's include directory (holding oneapi/dnnl/)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the .inc files")
    args = parser.parse_args(argv)
    try:
        generate(args.include, args.out)
    except HeaderError as exc:
        print(f"onednn_headers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
