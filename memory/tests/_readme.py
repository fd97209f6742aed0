"""The root README's Python snippets, so a test can run each one as written."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


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
