"""The API coverage check (tools/api_coverage.py): every name of oneDNN's
public C++ headers is bound, excluded with a reason
(tools/api_coverage_exclusions.txt) or on the checked-in list of names still
missing (tools/api_coverage_missing.txt). The list pins today's state in both
directions: a name missing that is not on it is a regression, and a name on
it that is now bound means the list must shrink. Regenerate it with

    python3 tools/api_coverage.py --write-missing
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "python3 tools/api_coverage.py --write-missing"


tool: Any = load_script("api_coverage", ROOT / "tools" / "api_coverage.py")


@pytest.fixture(scope="module")
def report() -> Any:
    return tool.run()


def test_nothing_missing_beyond_the_checked_in_list(report: Any) -> None:
    listed = set(tool.read_missing())
    new = [key for key in report.missing if key not in listed]
    assert not new, (
        f"{len(new)} name(s) of oneDNN's headers are neither bound nor excluded nor on "
        f"tools/api_coverage_missing.txt (a regression?): {new[:40]}. Bind them, or exclude "
        f"them with a reason in tools/api_coverage_exclusions.txt; if they are new in the "
        f"headers, regenerate the list: {REGENERATE}")


def test_the_missing_list_shrinks_when_names_are_bound(report: Any) -> None:
    missing = set(report.missing)
    stale = [key for key in tool.read_missing() if key not in missing]
    bound = [key for key in stale if key in report.covered]
    assert not stale, (
        f"{len(stale)} name(s) on tools/api_coverage_missing.txt are no longer missing "
        f"({len(bound)} now bound: {bound[:20]}; the others are excluded or gone from the "
        f"headers: {[k for k in stale if k not in bound][:20]}). Regenerate the list: {REGENERATE}")


def test_the_missing_list_is_as_generated(report: Any) -> None:
    """Same names in the same order as --write-missing writes them (no hand edits)."""
    if set(tool.read_missing()) != set(report.missing):
        pytest.skip("the names differ: the two tests above say how")
    assert tool.MISSING.read_text() == tool.missing_text(report), f"regenerate it: {REGENERATE}"


def test_every_exclusion_has_a_reason_and_matches_something(report: Any) -> None:
    entries = tool.read_exclusions()       # raises on an entry without a reason
    assert entries
    # A header entry may name a header this oneDNN build leaves empty (the
    # ukernel one needs ONEDNN_EXPERIMENTAL_UKERNEL); any other entry that
    # matches nothing is stale.
    stale = [f"line {e.line}: {e.pattern}" for e in report.unused_exclusions
             if not e.pattern.startswith("header:")]
    assert not stale, f"exclusions that match nothing in the headers: {stale}"


def test_the_figures_are_consistent(report: Any) -> None:
    covered, total = report.figures(True)
    covered_without, total_without = report.figures(False)
    assert 0 < covered <= total and 0 < covered_without <= total_without
    assert total - total_without > 1000          # memory::format_tag values are counted
    assert len(report.missing) == total - covered


# --------------------------------------------------------------------------
# The parser, on a header of our own

SNIPPET = r'''
#ifndef GUARD_HPP
#define GUARD_HPP
#include "oneapi/dnnl/dnnl.h"
#define DNNL_DEFINE_OPS(x) inline x operator|(x a, x b) { return a; }
namespace dnnl {
namespace detail {
struct hidden { void f(); };
}
/// A comment with a { brace.
struct widget : public handle<dnnl_widget_t> {
    using handle::handle;
    using dims = std::vector<int64_t>;
    enum class shape {
        round = 1, // a comment, with a comma
        square = 2,
#if 0
        never = 3,
#endif
#if DNNL_EXPERIMENTAL_THING
        experimental = 4,
#endif
    };
    struct part {
        part(int a, const std::string &name = "{not a brace") : a_ {a}, b_(a) {
            if (a) { throw 1; }
        }
        int size() const { return 1; }
    private:
        int a_, b_;
        void secret();
    };
    widget() = default;
    widget(const widget &) = delete;
    explicit widget(shape s, const std::vector<int> &v = {}) {}
    ~widget() {}
    void resize(int n);
    void resize(int n, shape s);
    void resize(int n, float f);
    void get_params(int index, float &alpha, algorithm &alg) const;
    void use(stream &astream, memory &amemory);
    template <typename T, req<std::is_same<T, int>::value> = true>
    widget &set(const T &value) { return *this; }
    bool operator==(const widget &other) const { return true; }
    static size_t count(shape s);
protected:
    void guarded();
};
DNNL_DEFINE_OPS(widget::shape)
inline int widget::size_of() const { return 0; }
class gadget {
    friend class widget;
    int hidden_member;
public:
    gadget(int a) : x {a} {}
    int x;
};
using widget_alias = widget;
inline void free_function(int a, int b = 0) {}
namespace ocl_interop {
inline engine make_engine(cl_device_id device, cl_context context) { return {}; }
}
} // namespace dnnl
namespace oneapi { namespace dnnl = ::dnnl; }
#endif
'''


def _snippet_keys() -> dict[str, str]:
    decls = tool.parse_header(SNIPPET, "snippet.hpp", {"DNNL_EXPERIMENTAL_THING": "1"})
    return {d.key: d.kind for d in decls}


def test_parser_finds_the_public_names() -> None:
    keys = _snippet_keys()
    expected = {
        "dnnl.widget": "class",
        "dnnl.widget.dims": "alias",
        "dnnl.widget.shape": "enum",
        "dnnl.widget.shape.round": "value",
        "dnnl.widget.shape.square": "value",
        "dnnl.widget.shape.experimental": "value",
        "dnnl.widget.part": "class",
        "dnnl.widget.part/2": "constructor",
        "dnnl.widget.part.size/0": "method",
        "dnnl.widget/0": "constructor",
        "dnnl.widget/2": "constructor",
        "dnnl.widget.resize/1": "method",
        "dnnl.widget.resize/2": "method",
        "dnnl.widget.get_params/1": "method",   # out-parameters are returned in Python
        "dnnl.widget.use/2": "method",          # stream& and memory& are not out-parameters
        "dnnl.widget.set/1": "method",
        "dnnl.widget.operator==/1": "operator",
        "dnnl.widget.count/1": "method",
        "dnnl.gadget": "class",
        "dnnl.gadget/1": "constructor",
        "dnnl.widget_alias": "alias",
        "dnnl.free_function/2": "function",
        "dnnl.ocl_interop.make_engine/2": "function",
    }
    assert keys == expected


def test_parser_keeps_overloads_and_signatures() -> None:
    decls = tool.parse_header(SNIPPET, "snippet.hpp", {})
    resize2 = [d for d in decls if d.key == "dnnl.widget.resize/2"]
    assert [d.signature for d in resize2] == ["dnnl::widget::resize(int n, shape s)",
                                              "dnnl::widget::resize(int n, float f)"]
    default = next(d for d in decls if d.key == "dnnl.widget/0")
    assert default.signature == "dnnl::widget::widget() = default"
    assert "dnnl.widget.shape.experimental" not in {d.key for d in decls}   # #if, undefined
    assert all(d.header == "snippet.hpp" for d in decls)


def test_arg_constants_follow_the_preprocessor() -> None:
    header = ("#define DNNL_ARG_SRC 1\n#if 0\n#define DNNL_ARG_NEVER 2\n#endif\n"
              "#define DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) \\\n    (32768 * ((idx) + 1))\n"
              "#define DNNL_OTHER 3\n")
    decls = tool.arg_constants(header, "types.h", {})
    assert [(d.kind, d.cxx, d.python) for d in decls] == [
        ("constant", "DNNL_ARG_SRC", "dnnl.ARG_SRC"),
        ("constant", "DNNL_ARG_ATTR_MULTIPLE_POST_OP", "dnnl.ARG_ATTR_MULTIPLE_POST_OP")]


# --------------------------------------------------------------------------
# The comparison, on a module of our own


def _pybind_function(name: str, doc: str) -> Any:
    def function(*args: Any, **kwargs: Any) -> None:
        """placeholder"""
    function.__doc__ = doc
    function.__name__ = name
    return function


def test_comparison_counts_overloads_by_argument_count(tmp_path: Path) -> None:
    class shape:
        round = 1

    class widget:
        pass

    widget.shape = shape                                  # type: ignore[attr-defined]
    widget.resize = _pybind_function("resize", (          # type: ignore[attr-defined]
        "resize(*args, **kwargs)\nOverloaded function.\n\n"
        "1. resize(self: m.widget, n: typing.SupportsInt) -> None\n\n"
        "2. resize(self: m.widget, n: int, s: m.widget.shape = <shape.round: 1>, "
        "f: collections.abc.Sequence[float] = [1.0, 2.0]) -> None\n"))
    root = types.SimpleNamespace(widget=widget)
    decls = tool.parse_header(SNIPPET, "snippet.hpp", {})
    exclusions_file = tmp_path / "exclusions.txt"
    exclusions_file.write_text(
        "# comment\n"
        "dnnl.gadget*  not in this module\n"
        "*.operator*  operators\n"
        r"decl:^[\w:]+\(\)\s=\sdefault$  empty handles" "\n"
        "header:other.hpp  another header\n")
    exclusions = tool.read_exclusions(exclusions_file)
    report = tool.compare(decls, exclusions, root)
    assert {"dnnl.widget", "dnnl.widget.shape", "dnnl.widget.shape.round",
            "dnnl.widget.resize/1", "dnnl.widget.resize/2"} <= report.covered
    assert "dnnl.widget.resize/2" not in report.missing
    assert {"dnnl.widget.shape.square", "dnnl.widget.part", "dnnl.widget.use/2",
            "dnnl.free_function/2", "dnnl.widget/2"} <= set(report.missing)
    assert {"dnnl.gadget", "dnnl.gadget/1", "dnnl.widget.operator==/1",
            "dnnl.widget/0"} == set(report.excluded)
    assert [e.pattern for e in report.unused_exclusions] == ["header:other.hpp"]


def test_an_exclusion_needs_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "exclusions.txt"
    path.write_text("dnnl.widget\n")
    with pytest.raises(SystemExit, match="needs a reason"):
        tool.read_exclusions(path)
