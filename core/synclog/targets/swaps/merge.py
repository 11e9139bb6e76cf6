"""One MERGE, for a warehouse with MERGE and no multi-statement transactions (`capabilities.merge`):
the staged rows are inserted, and a marker row per replaced key (or one for the scope) deletes the
old rows. A replayed MERGE changes nothing by itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec

DELETE_MARK = "_synclog_delete"
"""The source column that tells a marker row (delete the matching rows) from a staged one."""


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> list[Statement]:
    """The one MERGE."""
    keys = list(scope) if scope else list(table.replace_key)
    quoted = {c.name: target.quote(c.name) for c in table.columns}
    types = {c.name: c.type for c in table.columns}
    key = [quoted[k] for k in keys]
    if scope:
        params: list[Any] = list(scope.values())
        markers = sql.select_values([target.cast_sql(target.placeholder, types[k]) for k in keys], key)
    else:
        params = []
        markers = sql.distinct_keys(stage.render(), key)
    marker_values = [
        quoted[c.name] if c.name in keys else f"{target.cast_sql('NULL', c.type)} AS {quoted[c.name]}"
        for c in table.columns
    ]
    values = [target.staged_value_sql(c) for c in table.columns]
    merge = sql.merge_replacing(
        relation.render(),
        stage.render(),
        list(quoted.values()),
        values,
        markers,
        marker_values,
        key,
        target.quote(DELETE_MARK),
    )
    return [(merge, params)]
