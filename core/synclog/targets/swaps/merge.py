"""One MERGE, for a warehouse with MERGE and no multi-statement transactions (`capabilities.merge`):
the staged rows are inserted, and one marker row deletes every row of the replaced keys, which the
MERGE's condition matches by their constants. A replayed MERGE changes nothing by itself."""

from __future__ import annotations

from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.keys import Keys
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec

DELETE_MARK = "_synclog_delete"
"""The source column that tells the marker row (delete the matching rows) from a staged one."""


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
) -> list[Statement]:
    """The one MERGE."""
    dialect = target.dialect
    replaced, params = dialect.keys_sql(keys, "t")
    merge = sql.merge_replacing(
        relation.render(),
        stage.render(),
        [dialect.quote(c) for c in table.column_names()],
        [dialect.staged_value_sql(c) for c in table.columns],
        [dialect.cast_sql("NULL", c.type) for c in table.columns],
        replaced,
        dialect.quote(DELETE_MARK),
    )
    return [(merge, params)]
