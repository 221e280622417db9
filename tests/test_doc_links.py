"""Every relative link in the README and docs/ reaches a file of the
repository, and every ``#anchor`` in it names a heading of its target, as
GitHub makes heading anchors (the docs are read there and on PyPI)."""

import functools
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_LINK = re.compile(r"\]\(([^)\s]+)\)")  # [text](target): inline links, as the docs write them
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation other
    than hyphens and underscores dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@functools.lru_cache(maxsize=None)  # each document's headings, read once for all its links
def anchors(path):
    """The anchors of a Markdown file's headings (a repeated heading's
    later anchors get -1, -2, ... as on GitHub)."""
    found, seen = set(), {}
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        anchor = github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def relative_links(path):
    """(target path, the document itself for a bare ``#anchor``; anchor or
    None) of each link of a document that does not leave the repository
    by URL. Every ``](`` outside code blocks must open a link the pattern
    reads, so that no link (one with a title, say) goes unchecked."""
    text = _FENCE.sub("", path.read_text())
    targets = _LINK.findall(text)
    assert len(targets) == text.count("]("), f"{path.name}: a link the pattern does not read"
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        yield (path.parent / file_part).resolve() if file_part else path, anchor or None


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_reach_their_files_and_headings(document):
    broken = []
    for target, anchor in relative_links(document):
        if not target.exists():
            broken.append(f"{target.relative_to(ROOT) if ROOT in target.parents else target}: no such file")
        elif anchor is not None and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{target.relative_to(ROOT)}#{anchor}: no such heading")
    assert not broken, f"{document.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_anchor_rule_is_githubs():
    assert github_anchor("The tool: OpenCL calls per iteration") == "the-tool-opencl-calls-per-iteration"
    assert github_anchor("`eltwise`: GPU implementations ignore strides and offsets") == \
        "eltwise-gpu-implementations-ignore-strides-and-offsets"
    assert github_anchor("Which side went first, warm-ups (2026-11-27, morning)") == \
        "which-side-went-first-warm-ups-2026-11-27-morning"
    assert github_anchor("The thread rows: what grows with threads (`thread_usage.py`)") == \
        "the-thread-rows-what-grows-with-threads-thread_usagepy"


def test_the_walk_finds_links():
    links = list(relative_links(ROOT / "README.md"))
    assert any(target.name == "benchmarks.md" and anchor for target, anchor in links)
    assert len(DOCUMENTS) > 5


# Where docs/building.md's layout map must name each file: the folder's row,
# and the kinds of files that folder holds (caches and build output aside).
_MAPPED = {
    "cpp": ("*.cpp", "*.hpp"),
    "python/dnnl_ocl_interop": ("*.py", "*.pyi"),
    "benchmarks": ("*.py", "*.cpp"),
    "tools": ("*.py", "*.sh", "*.txt"),
}


def _layout_rows():
    """Each row of docs/building.md's layout table: its folder, its text."""
    rows = {}
    for line in (ROOT / "docs" / "building.md").read_text().splitlines():
        match = re.match(r"\| `([^`]+?)/?` \|(.*)\|$", line)
        if match:
            rows[match.group(1).rstrip("/")] = match.group(2)
    return rows


def _named(row, path):
    """Whether a row names a file: by its name, its stem in backticks, or
    `stem.*`; a file of a subpackage by the subpackage too (`ops/`)."""
    stem = path.stem
    return (path.name in row or f"`{stem}`" in row or f"`{stem}.*`" in row
            or f"`{path.parent.name}/`" in row and path.parent.name != "cpp")


def test_the_layout_map_names_every_file():
    rows = _layout_rows()
    unnamed = []
    for folder, patterns in _MAPPED.items():
        for pattern in patterns:
            for path in sorted((ROOT / folder).rglob(pattern)):
                if "__pycache__" in path.parts:
                    continue
                # cpp/<room>/... are mapped in the row of their room
                relative = path.relative_to(ROOT)
                room = ("/".join(relative.parts[:2]) if folder == "cpp" and len(relative.parts) > 2
                        else folder)
                row = rows.get(room)
                if str(relative) in rows:  # a file with a row of its own
                    continue
                if row is None or not _named(row, path):
                    unnamed.append(str(relative))
    assert not unnamed, f"docs/building.md's layout map does not name: {unnamed}"
