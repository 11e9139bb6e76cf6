"""Delete-and-insert: [the target's lock,] a DELETE of the replaced keys (or the scope) and an
INSERT from the stage, committed together in one transaction (`capabilities.transactions`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> list[Statement]:
    """[lock,] DELETE, INSERT: run in one transaction (`run_swap`)."""
    columns = [target.quote(c) for c in table.column_names()]
    values = [target.staged_value_sql(c) for c in table.columns]
    insert: Statement = (sql.insert_select(relation.render(), columns, values, stage.render()), ())
    return [*lock_and_delete(target, table, relation, stage, scope), insert]


def lock_and_delete(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> list[Statement]:
    """The target's lock statement where it gives one, then the DELETE of what the load replaces:
    the rows matching `scope`, else those whose replace key a staged row has."""
    rendered = relation.render()
    if scope:
        where = [target.quote(name) for name in scope]
        delete: Statement = (
            sql.delete_where_equal(rendered, where, target.placeholder),
            list(scope.values()),
        )
    else:
        delete = (target.delete_keys_sql(rendered, stage.render(), table.replace_key), ())
    lock = target.lock_statement(relation)
    return [*([lock] if lock else []), delete]
