"""The READMEs' Python snippets, so a test can run each one as written."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

README = Path(__file__).resolve().parents[2] / "README.md"
MEMORY_README = Path(__file__).resolve().parents[1] / "README.md"


class Snippet(NamedTuple):
    readme: str  # "README.md" or "memory/README.md"
    heading: str  # the nearest heading above, without its #s
    line: int  # the line of the ```python fence (1-based)
    code: str


def snippets(path: Path) -> list[Snippet]:
    """Every ```python block of a README, with its nearest heading (a ``#``
    line inside a code block is a comment, not a heading)."""
    name = "README.md" if path == README else "memory/README.md"
    found: list[Snippet] = []
    heading, start = "", 0
    block: list[str] | None = None
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if block is not None:
                found.append(Snippet(name, heading, start, "\n".join(block) + "\n"))
                block = None
            elif line == "```python" and not fenced:
                block, start = [], number
            fenced = not fenced
            continue
        if block is not None:
            block.append(line)
        elif not fenced and line.startswith("#"):
            heading = line.lstrip("#").strip()
    return found


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks of the README section whose heading starts with
    ``heading``, up to the next heading of the same or a higher level (a
    ``#`` line inside a code block is a comment, not a heading)."""
    blocks: list[str] = []
    level = 0  # the section's heading level; 0 until it is found
    block: list[str] | None = None  # the lines of the open python block
    fenced = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if block is not None:
                blocks.append("\n".join(block) + "\n")
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
            if line[marks:].strip().startswith(heading):
                level = marks
    assert level, f"README.md has no section {heading!r}"
    assert blocks, f"README.md section {heading!r} has no Python block"
    return blocks
