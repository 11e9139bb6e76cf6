"""What a swap strategy asks of the SQL target it writes statements for.

The strategies see a target through this protocol alone (`SqlTarget` is one), so the swaps
package depends on nothing above it.
"""

from __future__ import annotations

from typing import Protocol

from synclog.naming import Relation
from synclog.targets.sql_client import SqlClient
from synclog.targets.sql_dialect import SqlDialect
from synclog.targets.sql_statements import Statement
from synclog.targets.tables import TableSpec


class SwapHost(Protocol):
    """The SQL target a strategy's statements are for: its dialect (the SQL), its client (the
    reads a strategy may make before it writes: the partitions a swap touches), its lock and
    where its tables are."""

    @property
    def dialect(self) -> SqlDialect: ...

    @property
    def client(self) -> SqlClient: ...

    def lock_statement(self, relation: Relation) -> Statement | None: ...

    def relation(self, table: TableSpec, name: str | None = None) -> Relation: ...

    def existing_columns(self, relation: Relation) -> list[str] | None: ...
