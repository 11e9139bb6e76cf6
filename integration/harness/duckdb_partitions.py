"""A stand-in for a warehouse without transactions, MERGE, CTEs or window functions, atomic per
partition only (ClickHouse's MergeTree of the 2018 releases, Hive-style tables): DuckDB declaring
`transactions = no`, `merge = no`, `partition_replace = yes`, `ctes = no`, `window_functions =
no`, no CREATE OR REPLACE VIEW, so that the core replaces rows with its own partition replace and
retention, reached through the pieces docs/plugins.md section 9 walks through:

- a partition is replaced in steps (`replace_partition`): a scratch table like the table is filled
  with the partition's rows, then `REPLACE PARTITION` swaps it in;
- a view is dropped the warehouse's way (`SqlDialect.drop_view_sql`: `DROP TABLE`, as ClickHouse
  drops views);
- rows the driver holds arrive as a data block (`SqlClient.insert_rows`), never as `INSERT …
  VALUES` text, which the native protocol does not answer;
- a stage is created with a table option (`SqlDialect.stage_options`: `ENGINE = Memory`).

Its client is strict: it refuses, with the error a warehouse would give, every statement that
holds what such a warehouse does not parse: WITH, OVER, EXISTS, TRUE or FALSE, IS [NOT] DISTINCT
FROM, a CASE on a bare boolean, MERGE, INSERT … VALUES; and `transaction()`, which the core must
never ask of a target without transactions. What the warehouse has and DuckDB has not (`REPLACE
PARTITION`, `ENGINE = …`, `DROP TABLE` of a view) the client carries out in DuckDB, as the
warehouse's server would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pyarrow as pa

from synclog import plugin_api as api
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import DuckDBClient, DuckDBDialect, DuckDBTarget

SCHEME = "duckdb-partitions"

CAPABILITIES = replace(
    DUCKDB,
    transactions=False,
    transactional_ddl=False,
    replace_view=False,
    merge=False,
    partition_replace=True,
    ctes=False,
    window_functions=False,
)

SCRATCH = "_synclog_scratch"
"""The scratch table a partition's rows are put together in before they replace it."""
ENGINE = "ENGINE = Memory"

_TEXT = re.compile(r"""'(?:''|[^'])*'|"(?:""|[^"])*"|--[^\n]*|/\*.*?\*/""", re.S)
"""String literals, quoted names and comments: no keyword in them counts."""
REFUSED = {
    "a WITH query (CTE)": r"(^|\()\s*WITH\b",
    "a window function": r"\bOVER\s*\(",
    "EXISTS": r"(?<!\bIF )(?<!\bIF NOT )\bEXISTS\b",
    "a boolean literal": r"\b(TRUE|FALSE)\b",
    "IS DISTINCT FROM": r"\bIS\s+(NOT\s+)?DISTINCT\s+FROM\b",
    "a CASE on a boolean": r"\bCASE\s+WHEN\s+(NOT\s+)?[\w.]+\s+THEN\b",
    "MERGE": r"^\s*MERGE\b",
    "DROP VIEW (a view is dropped as a table)": r"^\s*DROP\s+VIEW\b",
    "CREATE OR REPLACE": r"^\s*CREATE\s+OR\s+REPLACE\b",
    "INSERT … VALUES (rows come as a data block)": r"^\s*INSERT\b.*\bVALUES\b",
}
"""What the warehouse does not parse, each with how to tell it (outside literals and names)."""
_REPLACE = re.compile(
    r"^REPLACE PARTITION OF (?P<table>\S+) WHERE (?P<where>.+) FROM (?P<scratch>\S+)$", re.S
)
_REPLACE_ALL = re.compile(r"^REPLACE TABLE (?P<table>\S+) FROM (?P<scratch>\S+)$")
_DROP_TABLE = re.compile(r"^DROP TABLE IF EXISTS (?P<name>\S+)$")


class WarehouseSyntaxError(Exception):
    """What the warehouse answers a statement it does not parse with."""


def refusal(sql: str) -> str | None:
    """What of `sql` the warehouse does not parse, or None."""
    code = _TEXT.sub("''", sql)
    for what, pattern in REFUSED.items():
        if re.search(pattern, code, re.I | re.S):
            return what
    return None


def check(sql: str) -> None:
    """Raise the warehouse's syntax error for a statement it does not parse."""
    refused = refusal(sql)
    if refused is not None:
        raise WarehouseSyntaxError(f"syntax error: {refused} is not supported: {sql}")


class StrictClient(DuckDBClient):
    """DuckDB speaking as the warehouse: it refuses what the warehouse does not parse and carries
    out its statements that DuckDB lacks (see the module)."""

    @contextmanager
    def cursor(self, sql: str, params: api.Params = ()) -> Iterator[Any]:
        check(sql)
        with self.errors():
            yield self._carried_out(sql, params)

    def query_bound(self, sql: str, params: api.Params) -> pa.Table:
        check(sql)
        return super().query_bound(sql, params)

    def batches_bound(self, sql: str, params: api.Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        check(sql)
        return super().batches_bound(sql, params, schema)

    def _carried_out(self, sql: str, params: api.Params) -> Any:
        """Run `sql` in DuckDB as the warehouse would: its REPLACE PARTITION atomically, its
        table engine left to DuckDB, its DROP TABLE of a view as a DROP VIEW."""
        values = self.driver_params(params)
        connection = self.connection
        replaced = _REPLACE.match(sql) or _REPLACE_ALL.match(sql)
        if replaced is not None:
            table, scratch = replaced["table"], replaced["scratch"]
            where = replaced.groupdict().get("where") or "1 = 1"
            connection.execute("BEGIN TRANSACTION")
            try:
                connection.execute(f"DELETE FROM {table} AS t WHERE {where}", values)
                connection.execute(f"INSERT INTO {table} SELECT * FROM {scratch}")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
            return connection.execute("SELECT 0 WHERE 1 = 0")
        dropped = _DROP_TABLE.match(sql)
        if dropped is not None and self._is_view(dropped["name"]):
            return connection.execute(f"DROP VIEW IF EXISTS {dropped['name']}")
        return connection.execute(sql.replace(f" {ENGINE}", ""), values)

    def _is_view(self, name: str) -> bool:
        plain = [part.strip('"') for part in name.split(".")]
        views = self.connection.execute(
            "SELECT 1 FROM duckdb_views() WHERE schema_name = ? AND view_name = ?", plain[-2:]
        )
        return bool(views.fetchall())

    def insert_rows(self, relation: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """The rows as one data block (an Arrow table the server inserts), not INSERT … VALUES."""
        block = pa.table({f"c{i}": [row[i] for row in rows] for i in range(len(columns))})
        with self.errors():
            self.connection.register("_synclog_block", block)
            try:
                self.connection.execute(
                    f"INSERT INTO {relation} ({', '.join(columns)}) SELECT * FROM _synclog_block"
                )
            finally:
                self.connection.unregister("_synclog_block")
        return len(rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        raise AssertionError("the core asked a target without transactions for a transaction")
        yield  # pragma: no cover


class PartitionedDialect(DuckDBDialect):
    """The warehouse's DROP TABLE for a view, and its stages' table engine."""

    def drop_view_sql(self, view: api.Relation) -> str:
        return f"DROP TABLE IF EXISTS {view.render()}"

    def stage_options(self, table: api.TableSpec) -> str:
        return ENGINE


class PartitionedDuckDB(DuckDBTarget, api.PartitionReplacer):
    """DuckDB whose rows change one partition at a time, each swapped in from a scratch table."""

    client: StrictClient

    def __init__(
        self, url: api.TargetURL, settings: api.TargetSettings, capabilities: api.Capabilities
    ) -> None:
        super().__init__(url, settings, capabilities)
        opened = self.client
        dialect = PartitionedDialect(capabilities)
        self.client = StrictClient(opened.connection, opened.outages, opened.where, dialect)

    def partition_sql(self, partitioning: api.Partitioning, row: str, staged: bool) -> str:
        """The UTC day of the time column (the session's time zone is UTC), or the sync: a stored
        row's partition is computed as a staged row's (no partition column of its own)."""
        source = f"{row}.{self.dialect.quote(partitioning.source)}"
        return f"CAST({source} AS DATE)" if partitioning.by_day else source

    def replace_partition(
        self,
        relation: api.Relation,
        partitioning: api.Partitioning | None,
        value: api.PartitionValue,
        rows: str,
        params: Sequence[Any],
    ) -> list[api.Statement]:
        """A scratch table like the table (the last one's dropped first), filled with `rows`; then
        REPLACE PARTITION (or TABLE) from it, atomically: the last step (the scratch table is
        temporary: the session's end, or the next replace, drops it)."""
        scratch = api.Relation(schema="temp", name=SCRATCH).render()
        steps: list[api.Statement] = [
            (f"DROP TABLE IF EXISTS {scratch}", ()),
            (f"CREATE TEMP TABLE {SCRATCH} AS SELECT * FROM {relation.render()} LIMIT 0", ()),
            (f"INSERT INTO {scratch} {rows}", params),
        ]
        if partitioning is None:
            steps.append((f"REPLACE TABLE {relation.render()} FROM {scratch}", ()))
        else:
            part = self.partition_sql(partitioning, "t", staged=False)
            where, bound = (f"{part} IS NULL", []) if value is None else (f"{part} = ?", [value])
            steps.append((f"REPLACE PARTITION OF {relation.render()} WHERE {where} FROM {scratch}", bound))
        return steps

    def drop_partition(
        self, relation: api.Relation, partitioning: api.Partitioning, value: api.PartitionValue
    ) -> api.Statement:
        """One DELETE of the partition's rows (ClickHouse: ALTER TABLE … DROP PARTITION)."""
        part = self.partition_sql(partitioning, "t", staged=False)
        if value is None:
            return f"DELETE FROM {relation.render()} AS t WHERE {part} IS NULL", ()
        return f"DELETE FROM {relation.render()} AS t WHERE {part} = ?", [value]


TARGET_TYPE = api.TargetType(
    name=SCHEME,
    schemes=(SCHEME,),
    capabilities=CAPABILITIES,
    summary="DuckDB as a warehouse without transactions, MERGE, CTEs or window functions (a stand-in)",
    opener=PartitionedDuckDB,
    example_url=f"{SCHEME}:///logs.duckdb",
    file_url=True,
)


@api.hookimpl
def synclog_register_targets(register: api.TargetRegister) -> None:
    register(TARGET_TYPE)
