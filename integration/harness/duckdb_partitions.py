"""A stand-in for a warehouse without transactions and without MERGE, atomic per partition only
(ClickHouse's MergeTree, Hive-style tables): DuckDB declaring `transactions = no`, `merge = no`,
`partition_replace = yes`, so the core replaces rows by rewriting each partition a load touches.

Its partition hook is one statement per partition. DuckDB has no `REPLACE PARTITION`; the one
statement that does what ClickHouse's does is a MERGE confined to the partition: every row of the
partition goes (matched by no source row), every row of the query comes in. It declares
`merge = no` all the same, so the core picks partition replace as for a warehouse with no MERGE,
and its client refuses `transaction()`: the core never asks a target without transactions for one.
docs/plugins.md walks through it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from synclog import plugin_api as api
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBClient, DuckDBTarget

SCHEME = "duckdb-partitions"

CAPABILITIES = replace(DUCKDB, transactions=False, merge=False, partition_replace=True)


class NoTransactionsClient(DuckDBClient):
    """DuckDB's client refusing transactions, as a warehouse without them would."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        raise AssertionError("the core asked a target without transactions for a transaction")
        yield  # pragma: no cover


class PartitionedDuckDB(DuckDBTarget, api.PartitionReplacer):
    """DuckDB whose rows change one partition at a time, in one statement each."""

    client: NoTransactionsClient

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        super().__init__(url, settings, capabilities)
        opened = self.client
        self.client = NoTransactionsClient(opened.connection, opened.outages, opened.where)

    def partition_sql(self, partitioning: api.Partitioning, row: str, staged: bool) -> str:
        """The UTC day of the time column (the session's time zone is UTC), or the sync: a stored
        row's partition is computed as a staged row's (no partition column of its own)."""
        source = f"{row}.{self.quote(partitioning.source)}"
        return f"CAST({source} AS DATE)" if partitioning.by_day else source

    def replace_partition(
        self,
        relation: api.Relation,
        partitioning: api.Partitioning | None,
        value: api.PartitionValue,
        rows: str,
        params: Sequence[Any],
    ) -> api.Statement:
        """One MERGE: the partition's rows not among `rows` (all of them: ON FALSE) go, `rows` come in."""
        names = [self.quote(n) for n in self.existing_columns(relation) or ()]
        listed = ", ".join(names)
        scope, bound = "", []
        if partitioning is not None:
            scope, bound = (
                f" AND {self.partition_sql(partitioning, 't', False)} IS NOT DISTINCT FROM ?",
                [value],
            )
        return (
            f"MERGE INTO {relation.render()} AS t USING ({rows}) AS s({listed}) ON FALSE "
            f"WHEN NOT MATCHED BY SOURCE{scope} THEN DELETE "
            f"WHEN NOT MATCHED THEN INSERT ({listed}) VALUES ({', '.join(f's.{n}' for n in names)})",
            [*params, *bound],
        )

    def drop_partition(
        self, relation: api.Relation, partitioning: api.Partitioning, value: api.PartitionValue
    ) -> api.Statement:
        """One DELETE of the partition's rows."""
        where = f"{self.partition_sql(partitioning, 't', False)} IS NOT DISTINCT FROM ?"
        return f"DELETE FROM {relation.render()} AS t WHERE {where}", [value]


TARGET_TYPE = api.TargetType(
    name=SCHEME,
    schemes=(SCHEME,),
    capabilities=CAPABILITIES,
    summary="DuckDB rewritten one partition at a time (a test stand-in)",
    opener=PartitionedDuckDB,
    example_url=f"{SCHEME}:///logs.duckdb",
    file_url=True,
)


@api.hookimpl
def synclog_register_targets(register: api.TargetRegister) -> None:
    register(TARGET_TYPE)
