"""Each layout's tables and columns, from the layouts' table specs."""

from __future__ import annotations

from synclog.docs_gen.markdown import code, header, table
from synclog.layouts.lake import FILES
from synclog.layouts.registry import LAYOUTS
from synclog.targets.tables import TableSpec


def page() -> str:
    """A section per layout, a table of columns per table spec."""
    parts = [
        header("Tables and columns", "the layouts' table specs"),
        "Every table each layout writes, with its columns in table order and their logical types "
        "(each warehouse's page says which physical type each becomes). Schemas are the defaults; "
        '`schemas = { census = "…" }` in `synclog.toml` changes them. Where a warehouse cannot carry '
        "run metadata (see the [capability matrix](capabilities.md)), the columns marked *run "
        "metadata* and the metadata tables are left out.\n",
    ]
    for name, layout in LAYOUTS.items():
        parts.append(f"\n## {name}\n")
        for spec in layout.tables:
            parts.append(_table_section(spec))
    return "\n".join(parts)


def _table_section(spec: TableSpec) -> str:
    where = FILES.get(spec)
    title = f"`{spec}`" if spec.view is None else f"`{spec.schema}.{spec.view}`"
    facts = [f"replace key: {', '.join(code(k) for k in spec.replace_key)}"]
    if spec.view is not None:
        facts.insert(0, f"a view over the table `{spec}`")
    if where is not None:
        facts.insert(0, f"files `{where}`")
    if spec.time_column:
        facts.append(f"time column: `{spec.time_column}`")
    facts.append("retention deletes expired rows" if spec.retained else "not subject to retention")
    if spec.run_metadata:
        facts.append("run metadata")
    columns = table(
        ["column", "type", "meaning"],
        [
            [code(c.name), c.type.value, c.description + (" (run metadata)" if c.run_metadata else "")]
            for c in spec.columns
        ],
    )
    return f"\n### {title}\n\n{'; '.join(facts)}.\n\n{columns}"
