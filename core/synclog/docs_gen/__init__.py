"""The generated reference pages of the docs site: written from the code, never by hand.

`python -m synclog.docs_gen` writes them under `docs/`; `--check` lists the stale ones and
exits 1 (the test suite runs the same check).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from synclog.docs_gen import capabilities, cli, config, tables

PAGES: dict[str, Callable[[], str]] = {
    "reference/capabilities.md": capabilities.page,
    "reference/tables.md": tables.page,
    "reference/cli.md": cli.page,
    "reference/config.md": config.page,
}
"""Each generated page, by its path under `docs/`, and what writes it."""


def stale(docs: Path) -> dict[str, str]:
    """The generated pages under `docs` that differ from what the code gives now (or are missing),
    with what they should hold."""
    rendered = {path: render() for path, render in PAGES.items()}
    return {
        path: text
        for path, text in rendered.items()
        if not (docs / path).exists() or (docs / path).read_text(encoding="utf-8") != text
    }


def write(docs: Path) -> list[str]:
    """Write the stale pages under `docs`; return their paths."""
    changed = stale(docs)
    for path, text in changed.items():
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        (docs / path).write_text(text, encoding="utf-8")
    return list(changed)
