"""Insert-only-missing, for a client that replays statements (`capabilities.replays_statements`):
the delete-and-insert swap whose INSERT adds only rows whose replace key (or scope) the table does
not hold. The DELETE before it made that true of every staged row, so the INSERT adds them all;
replayed, it adds none (a replayed DELETE finds nothing to delete)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.delete_insert import lock_and_delete
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> list[Statement]:
    """[lock,] DELETE, INSERT … WHERE NOT EXISTS: run in one transaction (`run_swap`)."""
    return [
        *lock_and_delete(target, table, relation, stage, scope),
        insert_absent(target, table, relation, stage, scope),
    ]


def insert_absent(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> Statement:
    """INSERT the staged rows while the table holds no row of their replace key (or of `scope`)."""
    columns = [target.quote(c) for c in table.column_names()]
    values = [target.staged_value_sql(c) for c in table.columns]
    rendered, staged = relation.render(), stage.render()
    if scope:
        matches = [f"t.{target.quote(name)} = {target.placeholder}" for name in scope]
        return sql.insert_select_absent(rendered, columns, values, staged, matches), list(scope.values())
    matches = [f"t.{target.quote(k)} = s.{target.quote(k)}" for k in table.replace_key]
    return sql.insert_select_absent(rendered, columns, values, staged, matches), ()
