"""How much of oneDNN's public C++ API the compiled module binds.

    python3 tools/api_coverage.py                  # the summary figures
    python3 tools/api_coverage.py --missing        # and every missing name, by header
    python3 tools/api_coverage.py --missing --no-format-tags   # the same, format tags left out
    python3 tools/api_coverage.py --excluded       # what each exclusion entry excludes
    python3 tools/api_coverage.py --write-missing  # rewrite tools/api_coverage_missing.txt
    python3 tools/api_coverage.py --include DIR    # headers of another oneDNN install

The headers are those of the oneDNN the package was built with: the tool asks
the module for its libdnnl and its oneDNN version, and takes the first
``include/oneapi/dnnl`` whose ``dnnl_version.h`` (and git hash) match, looked
for next to that library, in the bundled build's cache
(``third_party/onednn_bundle.py``; ``$DNNL_OCL_INTEROP_CACHE``, else
``$XDG_CACHE_HOME/dnnl_ocl_interop``, else ``~/.cache/dnnl_ocl_interop``) and
under ``$CMAKE_PREFIX_PATH``. ``--include`` names the directory itself.

What is counted, one *unit* each (a regex and brace-matching parser; oneDNN's
C++ headers are regular enough), in every public ``*.hpp`` of that directory,
inside ``namespace dnnl`` (``oneapi::dnnl`` is an alias of it), in ``public``
sections only, with ``#if`` blocks evaluated against ``dnnl_config.h``
(``DNNL_EXPERIMENTAL_PROFILING`` taken as defined: see EXTRA_DEFINES):

- every class/struct, nested ones included, and every ``using X = Y;`` alias;
- every enum and every enum value;
- every method, static method, constructor and free function, once per
  parameter count: C++ overloads that take the same number of parameters are
  one unit, named ``python.name/N``. A constructor of ``dnnl::memory::desc``
  with three parameters is ``dnnl.memory.desc/3`` (calling the class).
  Defaulted C++ parameters do not make extra units: ``/N`` is the full count.
  Out-parameters (non-const references to values the call fills in, as in
  ``post_ops::get_params_eltwise``) are not counted: Python returns them;
- every ``DNNL_ARG_*`` macro of ``dnnl_types.h`` (which ``dnnl.hpp`` includes).

Not counted at all: destructors, data members, ``friend`` declarations,
``using Base::Base;``, functions declared ``= delete`` and everything in
``private:`` and ``protected:`` sections. Everything else that Python has no
use for is listed, with a reason, in ``tools/api_coverage_exclusions.txt``
(C++ operators, handle traits, the SYCL, threadpool, Level Zero and ukernel
headers, ...): excluded units are left out of both sides of the figure.

A unit is covered when its Python name (the naming rule of docs/api.md)
resolves in ``dnnl_ocl_interop``: a class or enum to a class, an enum value
or constant to an attribute, a callable ``/N`` to a callable with an overload
that accepts N arguments besides ``self`` (pybind11's signature lines in
``__doc__``; ``inspect.signature`` for Python functions).

``memory::format_tag`` has 1,673 values (one a sentinel, excluded), more than
the rest of the headers together; they count, and the summary gives the
figures with and without them.

Only the standard library (and the installed package) is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import importlib
import inspect
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
EXCLUSIONS = ROOT / "tools" / "api_coverage_exclusions.txt"
MISSING = ROOT / "tools" / "api_coverage_missing.txt"
PACKAGE = "dnnl_ocl_interop"
FORMAT_TAGS = "dnnl.memory.format_tag.*"
# Headers whose ``DNNL_ARG_*`` macros count (included by dnnl.hpp).
ARG_HEADERS = ("dnnl_types.h",)
# Macros taken as defined beyond dnnl_config.h: libdnnl exports the profiling
# API in every build, and the package declares and binds it (cpp/core/stream.cpp).
EXTRA_DEFINES = {"DNNL_EXPERIMENTAL_PROFILING": "1"}


# --------------------------------------------------------------------------
# C++ side


@dataclasses.dataclass(frozen=True)
class Decl:
    """One C++ declaration: a class, alias, enum, enum value, callable or
    constant. ``arity`` is the parameter count of callables, else None."""

    kind: str        # class alias enum value constructor method function operator constant
    cxx: str         # dnnl::memory::desc::reshape
    python: str      # dnnl.memory.desc.reshape
    header: str      # dnnl.hpp
    arity: Optional[int] = None
    signature: str = ""   # normalized declaration text, for decl: exclusions

    @property
    def key(self) -> str:
        return self.python if self.arity is None else f"{self.python}/{self.arity}"


_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


def strip_comments(text: str) -> str:
    """Comments out, line continuations joined, string and char literals
    emptied (their braces and quotes must not confuse the parser)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        elif c in "\"'":
            m = _LITERAL.match(text, i)
            if m:
                out.append(c + c)
                i = m.end()
            else:
                out.append(c)
                i += 1
        elif c == "\\" and text.startswith("\n", i + 1):
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _eval_condition(expr: str, defines: dict[str, str]) -> bool:
    """#if expressions of the headers: defined(X), names, ints, ! && || ( )."""
    expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in defines else "0", expr)

    def value(name: str, depth: int = 0) -> str:
        raw = defines.get(name, "0").strip() or "1"
        if re.fullmatch(r"\w+", raw) and not raw.isdigit() and depth < 8:
            return value(raw, depth + 1) if raw in defines else "0"
        return raw

    expr = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: value(m.group(0)), expr)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"(\s|\d+|and|or|not|[()<>=!+\-*/%])*", expr):
        return True     # not understood: keep the block
    try:
        return bool(eval(expr, {"__builtins__": {}}, {}))  # noqa: S307 (digits and operators only)
    except Exception:
        return True


def preprocess(text: str, defines: dict[str, str]) -> str:
    """Drops directives and the lines of false #if branches; records
    #defines in ``defines`` (object-like values; function-like ones as '')."""
    lines = strip_comments(text).split("\n")
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []   # (this branch active, some branch taken)

    def active() -> bool:
        return all(branch for branch, _ in stack)

    for line in lines:
        m = re.match(r"\s*#\s*(\w+)\s*(.*)", line)
        if not m:
            out.append(line if active() else "")
            continue
        out.append("")
        directive, rest = m.group(1), m.group(2).strip()
        if directive in ("if", "ifdef", "ifndef"):
            if directive == "ifdef":
                cond = rest.split()[0] in defines if rest else False
            elif directive == "ifndef":
                cond = rest.split()[0] not in defines if rest else True
            else:
                cond = _eval_condition(rest, defines)
            stack.append((cond, cond))
        elif directive == "elif" and stack:
            _, taken = stack[-1]
            cond = not taken and _eval_condition(rest, defines)
            stack[-1] = (cond, taken or cond)
        elif directive == "else" and stack:
            _, taken = stack[-1]
            stack[-1] = (not taken, True)
        elif directive == "endif" and stack:
            stack.pop()
        elif directive == "define" and active():
            d = re.match(r"(\w+)(\()?\s*(.*)", rest)
            if d:
                defines[d.group(1)] = "" if d.group(2) else d.group(3).strip()
        elif directive == "undef" and active():
            defines.pop(rest.split()[0] if rest else "", None)
    return "\n".join(out)


def config_defines(include_dir: Path) -> dict[str, str]:
    defines: dict[str, str] = {}
    for name in ("dnnl_config.h", "dnnl_version.h", "dnnl_version_hash.h"):
        path = include_dir / name
        if path.is_file():
            preprocess(path.read_text(errors="replace"), defines)
    defines.update(EXTRA_DEFINES)
    return defines


_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}


def match_close(text: str, i: int, angles: bool = False) -> int:
    """Index just past the bracket group opening at text[i]."""
    stack = [_OPEN[text[i]]]
    j = i + 1
    while j < len(text) and stack:
        c = text[j]
        if c in "([{" or (angles and c == "<"):
            stack.append(_OPEN[c])
        elif c in ")]}" or (angles and c == ">"):
            if c == stack[-1]:
                stack.pop()
            elif c != ">":
                raise ValueError(f"unbalanced {c!r} at offset {j}")
        j += 1
    return j


def split_top(text: str, sep: str = ",") -> list[str]:
    """Splits at ``sep`` outside (), [], {}, <> and quotes."""
    parts, depth, start, quote = [], 0, 0, ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{<":
            depth += 1
        elif c in ")]}>" and not (c == ">" and text[i - 1:i] == "-"):
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


# Non-const references to these are objects the call uses, not out-parameters.
_IN_OUT_TYPES = {"stream", "memory", "engine", "tensor", "compiled_partition", "primitive",
                 "std::vector<tensor>", "std::vector<memory>"}


def is_out_param(param: str) -> bool:
    """A non-const lvalue reference to a value the function fills in
    (``float &alpha``): Python returns it instead (docs/api.md)."""
    m = re.fullmatch(r"(.+?)\s*&\s*\w+", param.strip(), re.S)
    if not m or param.strip().startswith("const ") or "&&" in param:
        return False
    return m.group(1).strip().split("::")[-1] not in _IN_OUT_TYPES \
        and m.group(1).strip() not in _IN_OUT_TYPES


def count_params(params: str) -> int:
    """Parameters a Python caller passes: out-parameters not counted."""
    params = params.strip()
    if params in ("", "void"):
        return 0
    return sum(not is_out_param(p) for p in split_top(params))


_ACCESS = re.compile(r"(public|protected|private)\s*:(?!:)")
_MACRO_CALL = re.compile(r"[A-Z][A-Z0-9_]*\s*\(")
_CLASS_HEAD = re.compile(r"(?:struct|class|union)\s+(\w+)\s*(?:<.*>)?\s*(?:final\s*)?(?::.*)?", re.S)
_ENUM_HEAD = re.compile(r"enum(?:\s+(?:class|struct))?\s+(\w+)\s*(?::[\w\s:]+)?", re.S)
_ALIAS = re.compile(r"using\s+(\w+)\s*=\s*(.+)", re.S)
_NAMESPACE = re.compile(r"(?:inline\s+)?namespace(?:\s+(\w+))?")
_SKIP_NAMESPACES = {"detail", "impl", "utils"}


@dataclasses.dataclass
class _Scope:
    path: tuple[str, ...]      # C++ path below dnnl, e.g. ("memory", "desc")
    is_class: bool
    public: bool               # current access
    hidden: bool               # a detail namespace or a non-public class


def python_name(path: Sequence[str]) -> str:
    """The naming rule (docs/api.md): dnnl::a::b -> dnnl.a.b, ``dnnl``
    standing for the package; nested classes and enums stay nested."""
    return ".".join(["dnnl", *path])


class HeaderParser:
    """Declarations of one preprocessed C++ header (see the module doc)."""

    def __init__(self, text: str, header: str) -> None:
        self.text = text
        self.header = header
        self.decls: list[Decl] = []

    def parse(self) -> list[Decl]:
        self._scope(0, _Scope((), False, True, True), top=True)
        return self.decls

    # -- helpers -----------------------------------------------------------

    def _skip_ws(self, i: int) -> int:
        while i < len(self.text) and self.text[i].isspace():
            i += 1
        return i

    def _to_semicolon(self, i: int) -> int:
        """Past the next ';' at depth 0 (skipping bracket groups)."""
        t = self.text
        while i < len(t):
            c = t[i]
            if c == ";":
                return i + 1
            if c in "([{":
                i = match_close(t, i)
                continue
            if c == "}":
                return i          # end of the enclosing scope: leave it to the caller
            i += 1
        return i

    def _head(self, i: int) -> tuple[str, int]:
        """Text of a statement up to ';' or '{' at depth 0 (brackets inside
        parentheses, e.g. default arguments ``= {}``, are skipped)."""
        t = self.text
        j = i
        while j < len(t):
            c = t[j]
            if c in "([":
                j = match_close(t, j)
                continue
            if c in ";{}":
                break
            j += 1
        return t[i:j], j

    def _add(self, kind: str, path: Sequence[str], scope: _Scope,
             arity: Optional[int] = None, signature: str = "") -> None:
        if scope.hidden or not scope.public:
            return
        self.decls.append(Decl(kind, "::".join(["dnnl", *path]), python_name(path),
                               self.header, arity, signature))

    # -- scopes ------------------------------------------------------------

    def _scope(self, i: int, scope: _Scope, top: bool = False) -> int:
        t = self.text
        while True:
            i = self._skip_ws(i)
            if i >= len(t):
                return i
            c = t[i]
            if c == "}":
                return i + 1
            if c == ";":
                i += 1
                continue
            access = _ACCESS.match(t, i)
            if access:
                scope.public = access.group(1) == "public"
                i = access.end()
                continue
            if _MACRO_CALL.match(t, i):            # DNNL_DEFINE_BITMASK_OPS(x) and the like
                i = match_close(t, t.index("(", i))
                continue
            head, j = self._head(i)
            i = self._statement(head.strip(), j, scope, top)

    def _statement(self, head: str, j: int, scope: _Scope, top: bool) -> int:
        t = self.text
        end = t[j] if j < len(t) else ";"
        template = False
        m = re.match(r"template\s*<", head)
        if m:
            head = head[match_close(head, m.end() - 1, angles=True):].strip()
            template = True
        if end == "}":
            return j
        ns = _NAMESPACE.fullmatch(head)
        if ns and end == "{":
            name = ns.group(1) or ""
            if top:
                inner = _Scope((), False, True, name != "dnnl")
            else:
                inner = _Scope((*scope.path, name), False, True,
                               scope.hidden or name in _SKIP_NAMESPACES or not name)
            return self._scope(j + 1, inner)
        if head.startswith(("friend ", "typedef ", "static_assert", "namespace ")):
            return match_close(t, j) if end == "{" else j + 1
        cls = _CLASS_HEAD.fullmatch(head)
        if cls and end == "{":
            name = cls.group(1)
            path = (*scope.path, name)
            self._add("class", path, scope)
            inner = _Scope(path, True, head.startswith(("struct", "union")),
                           scope.hidden or not scope.public)
            k = self._scope(j + 1, inner)
            return self._to_semicolon(k)
        enum = _ENUM_HEAD.fullmatch(head)
        if enum and end == "{":
            path = (*scope.path, enum.group(1))
            self._add("enum", path, scope)
            close = match_close(t, j)
            for item in split_top(t[j + 1:close - 1]):
                value = re.match(r"(\w+)", item)
                if value:
                    self._add("value", (*path, value.group(1)), scope)
            return self._to_semicolon(close)
        alias = _ALIAS.fullmatch(head)
        if alias and end == ";":
            if not template:
                self._add("alias", (*scope.path, alias.group(1)), scope)
            return j + 1
        if "(" in head and not head.startswith("using"):
            return self._function(head, j, scope)
        # a variable, data member or forward declaration
        return self._to_semicolon(match_close(t, j) if end == "{" else j)

    def _function(self, head: str, j: int, scope: _Scope) -> int:
        t = self.text
        op = re.search(r"\boperator\b\s*(\(\)|\[\]|[^\s(]+(?:\s+[^\s(]+)*)\s*\(", head)
        if op:
            name = "operator" + re.sub(r"\s+", " ", op.group(1))
            open_at = op.end() - 1
        else:
            fn = re.search(r"(~?\w+)\s*\(", head)
            if not fn:
                return self._to_semicolon(j)
            name = fn.group(1)
            open_at = fn.end() - 1
        close = match_close(head, open_at)
        params = head[open_at + 1:close - 1]
        out_of_class = head[:open_at].rstrip().rsplit(name, 1)[0].rstrip().endswith("::")
        tail = head[close:]
        # body, init list or nothing
        end = t[j] if j < len(t) else ";"
        if end == "{":
            k = j
            if re.search(r"(?<!:):(?!:)", tail):   # constructor initializer list
                k = self._ctor_body(j)
            k = match_close(t, k)
        else:
            k = j + 1
        if name.startswith("~") or out_of_class or re.search(r"=\s*delete\b", tail):
            return k        # destructors, definitions of members declared before, deleted ones
        defaulted = bool(re.search(r"=\s*default\b", tail))
        if scope.is_class and name == scope.path[-1]:
            kind, path = "constructor", scope.path
        elif name.startswith("operator"):
            kind, path = "operator", (*scope.path, name)
        else:
            kind, path = ("method" if scope.is_class else "function"), (*scope.path, name)
        signature = re.sub(r"\s+", " ", f"{'::'.join(['dnnl', *scope.path, name])}({params.strip()})")
        signature = signature.replace("( ", "(").replace(" )", ")")
        if defaulted:
            signature += " = default"
        self._add(kind, path, scope, count_params(params), signature)
        return k

    def _ctor_body(self, j: int) -> int:
        """``j`` is the first '{' after a constructor's initializer list: a
        member's brace initializer (after a name) or the body (after ')' or
        '}'). The position of the body."""
        t = self.text
        while True:
            before = t[:j].rstrip()[-1:]
            if not (before.isalnum() or before in "_>"):
                return j
            _, j = self._head(match_close(t, j))


def parse_header(text: str, header: str, defines: dict[str, str]) -> list[Decl]:
    return HeaderParser(preprocess(text, dict(defines)), header).parse()


def arg_constants(text: str, header: str, defines: dict[str, str]) -> list[Decl]:
    """The ``DNNL_ARG_*`` macros of the active branches of a C header."""
    marked = re.sub(r"^[ \t]*#[ \t]*define[ \t]+DNNL_(ARG_\w+)", r"@@arg \1", text, flags=re.M)
    names = re.findall(r"^@@arg (ARG_\w+)", preprocess(marked, dict(defines)), re.M)
    return [Decl("constant", f"DNNL_{n}", f"dnnl.{n}", header) for n in dict.fromkeys(names)]


def header_dir_decls(include_dir: Path) -> list[Decl]:
    """Every declaration of the public C++ headers of ``include_dir``."""
    defines = config_defines(include_dir)
    decls: list[Decl] = []
    for path in sorted(include_dir.glob("*.hpp")):
        decls += parse_header(path.read_text(errors="replace"), path.name, defines)
    for name in ARG_HEADERS:
        path = include_dir / name
        if path.is_file():
            decls += arg_constants(path.read_text(errors="replace"), name, defines)
    return decls


# --------------------------------------------------------------------------
# Locating the headers


def _version_of(include_dir: Path) -> tuple[tuple[int, int, int], str]:
    defines = config_defines(include_dir)
    version = tuple(int(defines.get(f"DNNL_VERSION_{p}", "-1") or -1)
                    for p in ("MAJOR", "MINOR", "PATCH"))
    return (version[0], version[1], version[2]), defines.get("DNNL_VERSION_HASH", "").strip('"')


def _as_include_dir(path: Path) -> Optional[Path]:
    for candidate in (path, path / "oneapi" / "dnnl", path / "include" / "oneapi" / "dnnl"):
        if (candidate / "dnnl.hpp").is_file():
            return candidate
    return None


def _cache_root() -> Path:
    # as third_party/onednn_bundle.py's cache_root()
    if os.environ.get("DNNL_OCL_INTEROP_CACHE"):
        return Path(os.environ["DNNL_OCL_INTEROP_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "dnnl_ocl_interop"


def find_include_dir(explicit: Optional[str] = None) -> Path:
    """The include/oneapi/dnnl directory of the oneDNN the module uses."""
    if explicit:
        found = _as_include_dir(Path(explicit))
        if not found:
            raise SystemExit(f"api_coverage: no dnnl.hpp in {explicit} "
                             "(nor in oneapi/dnnl, include/oneapi/dnnl below it)")
        return found
    core = importlib.import_module(f"{PACKAGE}._core")
    version = core.version()
    wanted = (int(version.major), int(version.minor), int(version.patch))
    library = core.library_path()
    candidates: list[Path] = []
    if library:
        real = Path(os.path.realpath(library))
        candidates += [real.parents[k] for k in range(1, min(4, len(real.parents)))]
    root = _cache_root()
    candidates += sorted(root.glob(f"onednn-{wanted[0]}.{wanted[1]}.{wanted[2]}-*/install"))
    candidates += [Path(p) for p in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep) if p]
    tried = []
    for candidate in candidates:
        include = _as_include_dir(candidate)
        if not include:
            continue
        tried.append(str(include))
        got, git_hash = _version_of(include)
        if got == wanted and (not git_hash or not version.hash or git_hash == version.hash):
            return include
    raise SystemExit(f"api_coverage: no headers of oneDNN {'.'.join(map(str, wanted))} "
                     f"(git {version.hash}) found (tried {', '.join(tried) or 'nothing'}); "
                     f"give the directory with --include")


# --------------------------------------------------------------------------
# Exclusions


@dataclasses.dataclass(frozen=True)
class Exclusion:
    pattern: str
    reason: str
    line: int

    def matches(self, decl: Decl) -> bool:
        if self.pattern.startswith("header:"):
            return fnmatch.fnmatchcase(decl.header, self.pattern[len("header:"):])
        if self.pattern.startswith("decl:"):
            return bool(decl.signature) and re.search(self.pattern[len("decl:"):], decl.signature) is not None
        return fnmatch.fnmatchcase(decl.key, self.pattern)


def read_exclusions(path: Path = EXCLUSIONS) -> list[Exclusion]:
    """``PATTERN REASON`` lines: the pattern is a glob on the Python name
    (``dnnl.x.y``, ``dnnl.x.f/N`` for callables), ``header:GLOB`` on the
    header's file name or ``decl:REGEX`` on the normalized C++ declaration."""
    exclusions = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2 or not parts[1].strip():
            raise SystemExit(f"{path}:{number}: an exclusion needs a reason: {line!r}")
        exclusions.append(Exclusion(parts[0], parts[1].strip(), number))
    return exclusions


# --------------------------------------------------------------------------
# Python side


def _signature_lines(obj: Any, name: str) -> list[str]:
    doc = getattr(obj, "__doc__", None) or ""
    lines = []
    for line in doc.splitlines():
        m = re.match(rf"\s*(?:\d+\.\s+)?{re.escape(name)}\((.*)$", line)
        if m:
            lines.append(m.group(0).strip())
    return lines


def _param_range(params: Iterable[str]) -> tuple[int, float]:
    """(required, maximum) positional-or-keyword count of pybind11 params."""
    required, maximum = 0, 0.0
    for param in params:
        param = param.strip()
        if param in ("", "/", "*"):
            continue
        if param.startswith("**"):
            continue
        if param.startswith("*"):
            maximum = float("inf")
            continue
        maximum += 1
        if "=" not in param.split(":", 1)[-1] and "=" not in param.split(":", 1)[0]:
            required += 1
    return required, maximum


def arities(obj: Any, name: str) -> list[tuple[int, float]]:
    """(required, maximum) argument counts of each overload of a callable,
    ``self`` not counted: pybind11's signature lines in ``__doc__``, else
    ``inspect.signature`` of a Python function."""
    ranges: list[tuple[int, float]] = []
    for line in _signature_lines(obj, name):
        start = line.index("(")
        try:
            params = split_top(line[start + 1:match_close(line, start) - 1])
        except ValueError:
            continue
        if params and params[0].split(":")[0].strip() == "self":
            params = params[1:]
        if params == ["*args", "**kwargs"] and "Overloaded function" in (obj.__doc__ or ""):
            continue        # pybind11's summary line of an overload set
        ranges.append(_param_range(params))
    if ranges or not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return ranges
    required, maximum = 0, 0.0
    for index, p in enumerate(inspect.signature(obj).parameters.values()):
        if index == 0 and p.name == "self":
            continue
        if p.kind is p.VAR_POSITIONAL:
            maximum = float("inf")
        elif p.kind is not p.VAR_KEYWORD:
            maximum += 1
            required += p.default is p.empty
    return [(required, maximum)]


_MISSING_ATTR = object()


def resolve(name: str, root: Any) -> Any:
    obj = root
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, _MISSING_ATTR)
        if obj is _MISSING_ATTR:
            return _MISSING_ATTR
    return obj


def _accepts(ranges: Iterable[tuple[int, float]], count: int) -> bool:
    return any(lo <= count <= hi for lo, hi in ranges)


def is_covered(decl: Decl, root: Any) -> bool:
    obj = resolve(decl.python, root)
    if obj is _MISSING_ATTR:
        return False
    if decl.kind in ("class", "enum"):
        return inspect.isclass(obj)
    if decl.kind == "constructor":
        return inspect.isclass(obj) and _accepts(arities(obj.__init__, "__init__"), decl.arity or 0)
    if decl.kind in ("method", "function", "operator"):
        if inspect.isclass(obj) or not callable(obj):
            return False
        return _accepts(arities(obj, decl.python.rsplit(".", 1)[1]), decl.arity or 0)
    return True       # aliases, enum values and constants: the attribute exists


# --------------------------------------------------------------------------
# The comparison


@dataclasses.dataclass
class Report:
    include_dir: Path
    units: dict[str, list[Decl]]           # key -> its declarations (overloads)
    excluded: dict[str, Exclusion]         # key -> the entry that excludes it
    covered: set[str]
    unused_exclusions: list[Exclusion]

    @property
    def counted(self) -> list[str]:
        return sorted(k for k in self.units if k not in self.excluded)

    @property
    def missing(self) -> list[str]:
        return [k for k in self.counted if k not in self.covered]

    def figures(self, format_tags: bool = True) -> tuple[int, int]:
        keys = [k for k in self.counted
                if format_tags or not fnmatch.fnmatchcase(k, FORMAT_TAGS)]
        return sum(k in self.covered for k in keys), len(keys)

    def header_of(self, key: str) -> str:
        return self.units[key][0].header

    def kind_of(self, key: str) -> str:
        return self.units[key][0].kind


def units_of(decls: Iterable[Decl]) -> dict[str, list[Decl]]:
    units: dict[str, list[Decl]] = defaultdict(list)
    for decl in decls:
        units[decl.key].append(decl)
    return dict(units)


def exclusion_for(decls: Sequence[Decl], exclusions: Sequence[Exclusion]) -> Optional[Exclusion]:
    """The entry that excludes a unit: a name or header entry matching it, or
    ``decl:`` entries matching every one of its overloads."""
    for entry in exclusions:
        if not entry.pattern.startswith("decl:") and entry.matches(decls[0]):
            return entry
    decl_entries = [e for e in exclusions if e.pattern.startswith("decl:")]
    first: Optional[Exclusion] = None
    for decl in decls:
        hit = next((e for e in decl_entries if e.matches(decl)), None)
        if hit is None:
            return None
        first = first or hit
    return first


def compare(decls: Iterable[Decl], exclusions: Sequence[Exclusion], root: Any,
            include_dir: Path = Path(".")) -> Report:
    units = units_of(decls)
    excluded: dict[str, Exclusion] = {}
    for key, overloads in units.items():
        entry = exclusion_for(overloads, exclusions)
        if entry:
            excluded[key] = entry
    used = {e.line for e in excluded.values()}
    covered = {k for k, overloads in units.items()
               if k not in excluded and is_covered(overloads[0], root)}
    return Report(include_dir, units, excluded, covered,
                  [e for e in exclusions if e.line not in used])


def run(include: Optional[str] = None, exclusions_path: Path = EXCLUSIONS) -> Report:
    include_dir = find_include_dir(include)
    root = importlib.import_module(PACKAGE)
    return compare(header_dir_decls(include_dir), read_exclusions(exclusions_path), root, include_dir)


def read_missing(path: Path = MISSING) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def missing_text(report: Report) -> str:
    lines = ["# Names of oneDNN's C++ headers the module does not bind yet (tools/api_coverage.py).",
             "# Generated: python3 tools/api_coverage.py --write-missing",
             "# tests/test_api_coverage.py fails when this list and the module disagree:",
             "# bind a name, then regenerate; never add a name by hand (exclude it with a",
             "# reason in tools/api_coverage_exclusions.txt if Python has no use for it)."]
    by_header: dict[str, list[str]] = defaultdict(list)
    for key in report.missing:
        by_header[report.header_of(key)].append(key)
    for header in sorted(by_header):
        lines.append(f"# {header}")
        lines += by_header[header]
    return "\n".join(lines) + "\n"


def _percent(covered: int, total: int) -> str:
    return f"{covered}/{total} ({100 * covered / total:.1f} %)" if total else "0/0"


def summary(report: Report) -> str:
    with_tags = report.figures(True)
    without = report.figures(False)
    kinds: Counter[str] = Counter(report.kind_of(k) for k in report.counted)
    covered_kinds: Counter[str] = Counter(report.kind_of(k) for k in report.covered)
    lines = [f"oneDNN headers: {report.include_dir}",
             f"API coverage: {_percent(*with_tags)} with memory::format_tag values, "
             f"{_percent(*without)} without them",
             f"({len(report.excluded)} units excluded by tools/api_coverage_exclusions.txt)",
             "by kind: " + ", ".join(f"{k} {covered_kinds[k]}/{kinds[k]}" for k in sorted(kinds))]
    return "\n".join(lines)


def missing_report(report: Report, format_tags: bool = True) -> str:
    lines: list[str] = []
    by_header: dict[str, list[str]] = defaultdict(list)
    for key in report.missing:
        if format_tags or not fnmatch.fnmatchcase(key, FORMAT_TAGS):
            by_header[report.header_of(key)].append(key)
    for header in sorted(by_header):
        keys = by_header[header]
        lines.append(f"\n== {header}: {len(keys)} missing")
        groups: Counter[str] = Counter(_group(k) for k in keys)
        lines.append("   largest groups: " + ", ".join(f"{g} {n}" for g, n in groups.most_common(8)))
        lines += [f"  {k}" for k in keys]
    return "\n".join(lines)


def _group(key: str) -> str:
    """The class or namespace a unit belongs to, one level below dnnl,
    dnnl.graph or an interop namespace (dnnl.graph.op.kind.Abs -> dnnl.graph.op)."""
    parts = key.split("/")[0].split(".")
    depth = 2
    while depth < len(parts) - 1 and parts[depth - 1] in ("graph", "ocl_interop"):
        depth += 1
    return ".".join(parts[:depth])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--include", metavar="DIR",
                        help="oneDNN's include/oneapi/dnnl directory (default: that of the oneDNN the module uses)")
    parser.add_argument("--missing", action="store_true", help="list the missing names, by header")
    parser.add_argument("--no-format-tags", action="store_true",
                        help="with --missing: leave memory::format_tag values out of the list")
    parser.add_argument("--excluded", action="store_true", help="list the excluded names with their reasons")
    parser.add_argument("--write-missing", action="store_true", help=f"rewrite {MISSING.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    report = run(args.include)
    print(summary(report))
    for entry in report.unused_exclusions:
        print(f"note: exclusion line {entry.line} ({entry.pattern}) matches nothing in these headers")
    if args.missing:
        print(missing_report(report, not args.no_format_tags))
    if args.excluded:
        for key in sorted(report.excluded):
            print(f"  {key}: {report.excluded[key].pattern}")
    if args.write_missing:
        MISSING.write_text(missing_text(report))
        print(f"wrote {MISSING.relative_to(ROOT)} ({len(report.missing)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
