"""What a swap strategy asks of the SQL target it writes statements for.

The strategies see a target through this protocol alone (`SqlTarget` is one), so the swaps
package depends on nothing above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from synclog.naming import Relation
from synclog.targets.sql_statements import Statement
from synclog.targets.tables import Column, ColumnType, TableSpec


class SwapHost(Protocol):
    """The SQL target a strategy's statements are for: its spelling, and the two reads a
    strategy may make before it writes (the partitions a swap touches, a table's columns)."""

    @property
    def placeholder(self) -> str: ...

    def quote(self, name: str) -> str: ...

    def cast_sql(self, expression: str, type_: ColumnType) -> str: ...

    def json_text_sql(self, expression: str) -> str: ...

    def staged_value_sql(self, column: Column) -> str: ...

    def lock_statement(self, relation: Relation) -> Statement | None: ...

    def delete_keys_sql(self, target: str, staged: str, key: Sequence[str]) -> str: ...

    def relation(self, table: TableSpec, name: str | None = None) -> Relation: ...

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def existing_columns(self, relation: Relation) -> list[str] | None: ...
