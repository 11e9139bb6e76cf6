"""Insert-only-missing, for a client that replays statements (`capabilities.replays_statements`):
the delete-and-insert swap whose INSERT adds the staged rows only while the table holds no row of
the replaced keys. The DELETE before it made that true, so the INSERT adds them all; replayed, it
adds none (a replayed DELETE finds nothing to delete, then the INSERT's guard is false)."""

from __future__ import annotations

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.keys import Keys
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.delete_insert import insert_staged, lock_and_delete
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
) -> list[Statement]:
    """[lock,] DELETE, INSERT … WHERE no row of the keys is left: run in one transaction (`run_swap`)."""
    if keys.empty:
        return [*lock_and_delete(target, relation, keys), (insert_staged(target, table, relation, stage), ())]
    condition, params = target.dialect.keys_sql(keys)
    guard = sql.none_left(relation.render(), condition)
    return [
        *lock_and_delete(target, relation, keys),
        (insert_staged(target, table, relation, stage, guard), params),
    ]
