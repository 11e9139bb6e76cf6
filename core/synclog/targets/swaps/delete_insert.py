"""Delete-and-insert: [the target's lock,] a DELETE of the replaced keys and an INSERT from the
stage, committed together in one transaction (`capabilities.transactions`)."""

from __future__ import annotations

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.keys import Keys
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
) -> list[Statement]:
    """[lock,] DELETE, INSERT: run in one transaction (`run_swap`)."""
    return [*lock_and_delete(target, relation, keys), (insert_staged(target, table, relation, stage), ())]


def lock_and_delete(target: SwapHost, relation: Relation, keys: Keys) -> list[Statement]:
    """The target's lock statement where it gives one, then the DELETE of the rows whose key
    `keys` holds, matched by their constants (none without keys)."""
    lock = target.lock_statement(relation)
    statements = [lock] if lock else []
    if not keys.empty:
        condition, params = target.dialect.keys_sql(keys)
        statements.append((sql.delete_where(relation.render(), condition), params))
    return statements


def insert_staged(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, where: str = ""
) -> str:
    """INSERT every staged row [`where` holds] into `relation`, each column as it is stored."""
    dialect = target.dialect
    columns = [dialect.quote(c) for c in table.column_names()]
    values = [dialect.staged_value_sql(c) for c in table.columns]
    return sql.insert_select(relation.render(), columns, values, stage.render(), where)
