"""The capability matrix: every installed target type and its `Capabilities`."""

from __future__ import annotations

from synclog.docs_gen.markdown import code, header, table
from synclog.plugins.manager import registry


def _cell(value: str) -> str:
    """A capability's value; a quote character shown as code, as written in SQL."""
    return code(value) if value in ('"', "`") else value


def page() -> str:
    """The targets the installed plugins register, then their capabilities side by side."""
    types = registry().types()
    targets = table(
        ["target", "URL schemes", "example URL", "summary"],
        [
            [t.name, ", ".join(code(f"{s}://") for s in t.schemes), code(t.example_url), t.summary]
            for t in types
        ],
    )
    by_target = [dict(t.capabilities.as_rows()) for t in types]
    names = list(by_target[0]) if by_target else []
    rows = [[name, *[_cell(c[name]) for c in by_target]] for name in names]
    matrix = table(["capability", *[t.name for t in types]], rows)
    return (
        header("Capability matrix", "the installed targets' `Capabilities`")
        + "What each target installed with synclog and its plugins declares (`synclog plugins` prints "
        "the same). What the core does with each capability: "
        "[Capabilities](../plugins/capabilities.md).\n\n" + matrix + "\n## Targets\n\n" + targets
    )
