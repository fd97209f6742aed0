"""The READMEs' and docs/ pages' code blocks, so a test can run each one as
written."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MEMORY_README = ROOT / "memory" / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """Every page whose code blocks CI runs: the two READMEs, then docs/."""
    return [README, MEMORY_README, *sorted(DOCS.glob("*.md"))]


class Snippet(NamedTuple):
    readme: str  # the page, from the repository's root: "docs/store.md"
    heading: str  # the nearest heading above, without its #s
    line: int  # the line of the opening fence (1-based)
    code: str
    lang: str = "python"  # the fence's language: "python", "sh", "json", ...


def blocks(path: Path) -> list[Snippet]:
    """Every fenced block of a page, with its language and nearest heading
    (a ``#`` line inside a code block is a comment, not a heading)."""
    name = path.relative_to(ROOT).as_posix()
    found: list[Snippet] = []
    heading, start, lang = "", 0, ""
    block: list[str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if block is None:
                block, start, lang = [], number, line[3:].strip()
            else:
                code = "\n".join(block) + "\n"
                found.append(Snippet(name, heading, start, code, lang))
                block = None
            continue
        if block is not None:
            block.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return found


def snippets(path: Path) -> list[Snippet]:
    """Every ```python block of a page, with its nearest heading."""
    return [s for s in blocks(path) if s.lang == "python"]


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks of the section whose heading starts with
    ``heading``, up to the next heading of the same or a higher level, on
    the first page that has one (README.md first, then docs/)."""
    for path in (README, *sorted(DOCS.glob("*.md"))):
        found = _section_blocks(path, heading)
        if found is not None:
            assert found, f"{path.name}: section {heading!r} has no Python block"
            return found
    raise AssertionError(f"no page has a section {heading!r}")


def _section_blocks(path: Path, heading: str) -> list[str] | None:
    """The section's ```python blocks on one page; None without the section."""
    found: list[str] = []
    level = 0  # the section's heading level; 0 until it is found
    block: list[str] | None = None  # the lines of the open python block
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if block is not None:
                found.append("\n".join(block) + "\n")
                block = None
            elif level and line == "```python" and not fenced:
                block = []
            fenced = not fenced
            continue
        if block is not None:
            block.append(line)
        elif not fenced and line.startswith("#"):
            marks = len(line) - len(line.lstrip("#"))
            if level and marks <= level:
                break
            if not level and line[marks:].strip().startswith(heading):
                level = marks
    return found if level else None
