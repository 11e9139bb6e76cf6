"""Partition replace, for a warehouse atomic per partition only (`capabilities.partition_replace`,
without transactions or MERGE): every partition a load touches is rewritten, each in one atomic step.

A table with a time column is partitioned by that column's UTC day, one without but with a
`sync_id` by sync (snapshots are replaced per sync, runs per run of one sync), any other is one
partition (`partitioning_of`). A swap first asks which partitions receive staged rows or hold rows
of the replaced keys (matched by their constants), then how many rows of each of those partitions
stay and go (the partitions named by value); then each one that keeps rows is rewritten from the
stage and its own kept rows (`PartitionReplacer.replace_partition`: one statement, or a few that
fill a scratch table and swap it in), and each one left empty is dropped (`drop_partition`).
Retention rewrites the days holding expired rows the same way (`expired_statements`). The swap is
atomic per partition: a failure between two partitions' steps leaves the first rewritten, and a
replay of the load converges.

The SQL is portable to warehouses without boolean literals or values, EXISTS, CTEs or window
functions: conditions are comparisons, and a row's "is it removed" is a `CASE WHEN … THEN 1 ELSE 0
END` compared with 1. The target gives the dialect: the SQL of a row's partition
(`partition_sql`), and the statements that rewrite or drop one partition.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.targets.keys import Keys
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import ColumnType, TableSpec

if TYPE_CHECKING:
    from synclog.targets.base import Cutoffs

DAY = "_synclog_day"
SYNC = "_synclog_sync"
COLUMNS = (DAY, SYNC)
"""The names of the partitionings; a target that stores a row's partition in a column of its own
(Hive-style tables) names it so, and the swap leaves those columns out of the rows it moves."""


@dataclass(frozen=True)
class Partitioning:
    """How a table's rows fall into partitions: by the UTC day of its time column, or by its sync."""

    name: str
    """`DAY` or `SYNC`: the column a target that stores the partition keeps it in."""
    source: str
    """The table column the partition follows."""

    @property
    def by_day(self) -> bool:
        return self.name == DAY


PartitionValue = date | int | None
"""A partition: its UTC day, its sync id, or None (rows without a time or a sync)."""


def partitioning_of(table: TableSpec) -> Partitioning | None:
    """How `table` is partitioned; None for a table that is one partition (the metadata tables)."""
    if table.time_column is not None:
        return Partitioning(DAY, table.time_column)
    if "sync_id" in table.column_names():
        return Partitioning(SYNC, "sync_id")
    return None


@runtime_checkable
class PartitionReplacer(Protocol):
    """`partition_replace`: how the target's dialect rewrites and drops one partition."""

    @abstractmethod
    def replace_partition(
        self,
        relation: Relation,
        partitioning: Partitioning | None,
        value: PartitionValue,
        rows: str,
        params: Sequence[Any],
    ) -> Sequence[Statement]:
        """The statements, run one by one, after which partition `value` of `relation` (the whole
        table where `partitioning` is None) holds exactly the rows of the query `rows` (with
        `params`): the table's stored columns in order. The last one swaps the partition in
        atomically; those before it may prepare it (fill a scratch table with `rows`, to `REPLACE
        PARTITION` from). For a partition, `rows` reads the stage and `relation` itself, and
        yields rows (a partition left empty is dropped instead); for a whole table it reads the
        stage only (the kept rows are in it by then), and yields no row where the table is to be
        emptied."""

    @abstractmethod
    def drop_partition(
        self, relation: Relation, partitioning: Partitioning, value: PartitionValue
    ) -> Statement:
        """One statement that removes partition `value` of `relation` with its rows."""

    @abstractmethod
    def partition_sql(self, partitioning: Partitioning, row: str, staged: bool) -> str:
        """SQL of the partition of the row aliased `row`: a staged row (`staged`), or one of the
        table (which may read the partition from a column of its own)."""


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
) -> list[Statement]:
    """The rewrite of every partition holding rows of the replaced keys or receiving staged rows."""
    return rewrite(target, table, relation, target.dialect.keys_sql(keys, "t"), stage)[0]


def expired_statements(target: SwapHost, table: TableSpec, cutoffs: Cutoffs) -> tuple[list[Statement], int]:
    """Retention's rewrite: the days holding rows older than their sync's cut-off, without them
    (days that expire whole are dropped); and how many rows go."""
    assert table.time_column is not None
    q, p = target.dialect.quote, target.dialect.placeholder
    time, sync = q(table.time_column), q("sync_id")
    overridden = list(cutoffs.per_sync)
    exempt = f" AND t.{sync} NOT IN ({', '.join([p] * len(overridden))})" if overridden else ""
    clauses = [f"(t.{time} < {p}{exempt})"]
    params: list[Any] = [cutoffs.default, *overridden]
    for sync_id, cutoff in cutoffs.per_sync.items():
        clauses.append(f"(t.{sync} = {p} AND t.{time} < {p})")
        params += [sync_id, cutoff]
    return rewrite(target, table, target.relation(table), (" OR ".join(clauses), params), None)


def rewrite(
    target: SwapHost, table: TableSpec, relation: Relation, removal: Statement, stage: Relation | None
) -> tuple[list[Statement], int]:
    """Statements that leave `relation` without the rows the condition `removal` (over the table
    aliased `t`, with its parameters) matches and with the staged rows, partition by partition;
    and how many rows they remove. Every read of the table is bounded by constants: the removal's,
    then the values of the partitions it touches."""
    parts = partitioning_of(table)
    if parts is None:
        assert stage is not None, "only tables with a time column expire"
        return _rewrite_whole(target, table, relation, removal, stage), 0
    gone = f"CASE WHEN {removal[0]} THEN 1 ELSE 0 END"
    touched = _touched(target, parts, relation, removal, stage)
    if not touched:
        return [], 0
    t_part = _partition(target, parts, "t", staged=False)
    within, within_params = _among(target, t_part, list(touched))
    counted = target.client.fetch(  # per partition touched: its rows that go, and those that stay
        f"SELECT u.p, SUM(u.gone), SUM(1 - u.gone) FROM (SELECT {t_part} AS p, {gone} AS gone "
        f"FROM {relation.render()} AS t WHERE {within}) AS u GROUP BY u.p",
        [*removal[1], *within_params],
    )
    removed = {value: (int(out or 0), int(kept or 0)) for value, out, kept in counted}
    stored = [n for n in target.existing_columns(relation) or () if n.lower() not in COLUMNS]
    spec = {c.name.lower(): c for c in table.columns}
    dialect, replacer_ = target.dialect, replacer(target)
    statements: list[Statement] = []
    dropped = []
    for value, staged_here in touched.items():
        if not staged_here and not removed.get(value, (0, 0))[1]:
            dropped.append(value)
            continue
        selects, params = [], []
        if stage is not None and staged_here:
            s_part = _partition(target, parts, "s", staged=True)
            staged = ", ".join(
                dialect.staged_value_sql(spec[n.lower()]) if n.lower() in spec else "NULL" for n in stored
            )
            same, same_params = _equal(target, s_part, value)
            selects.append(f"SELECT {staged} FROM {stage.render()} AS s WHERE {same}")
            params += same_params
        kept = ", ".join(f"t.{dialect.quote(n)}" for n in stored)
        same, same_params = _equal(target, t_part, value)
        selects.append(f"SELECT {kept} FROM {relation.render()} AS t WHERE {same} AND {gone} = 0")
        params += [*same_params, *removal[1]]
        statements += replacer_.replace_partition(relation, parts, value, " UNION ALL ".join(selects), params)
    statements += [replacer_.drop_partition(relation, parts, value) for value in dropped]
    return statements, sum(out for out, _ in removed.values())


def _touched(
    target: SwapHost, parts: Partitioning, relation: Relation, removal: Statement, stage: Relation | None
) -> dict[PartitionValue, bool]:
    """The partitions staged rows go to or rows of `removal` are in, each with whether staged rows
    go there (one query: the stage, and the table by the removal's constants)."""
    t_part = _partition(target, parts, "t", staged=False)
    sources = [f"SELECT {t_part} AS p, 0 AS staged FROM {relation.render()} AS t WHERE {removal[0]}"]
    if stage is not None:
        s_part = _partition(target, parts, "s", staged=True)
        sources.insert(0, f"SELECT {s_part} AS p, 1 AS staged FROM {stage.render()} AS s")
    rows = target.client.fetch(
        f"SELECT u.p, MAX(u.staged) FROM ({' UNION ALL '.join(sources)}) AS u GROUP BY u.p", removal[1]
    )
    return {value: bool(staged) for value, staged in rows}


def _equal(target: SwapHost, part: str, value: PartitionValue) -> tuple[str, list[Any]]:
    """`part` is partition `value` (IS NULL for rows without a time or a sync)."""
    if value is None:
        return f"{part} IS NULL", []
    return f"{part} = {target.dialect.placeholder}", [value]


def _among(target: SwapHost, part: str, values: Sequence[PartitionValue]) -> tuple[str, list[Any]]:
    """`part` is one of the partitions `values`."""
    named = [v for v in values if v is not None]
    clauses = [f"{part} IS NULL"] if len(named) < len(values) else []
    if named:
        clauses.append(f"{part} IN ({', '.join([target.dialect.placeholder] * len(named))})")
    return "(" + " OR ".join(clauses) + ")", named


def _rewrite_whole(
    target: SwapHost, table: TableSpec, relation: Relation, removal: Statement, stage: Relation
) -> list[Statement]:
    """A table that is one partition: its kept rows join the staged ones in the stage (JSON as
    its text, as staged), then the stage's rows replace the table's."""
    dialect = target.dialect
    names = [dialect.quote(c) for c in table.column_names()]
    kept = [
        dialect.json_text_sql(f"t.{q}") if c.type is ColumnType.JSON else f"t.{q}"
        for c, q in zip(table.columns, names, strict=True)
    ]
    staged = ", ".join(dialect.staged_value_sql(c) for c in table.columns)
    return [
        (
            f"INSERT INTO {stage.render()} ({', '.join(names)}) SELECT {', '.join(kept)} "
            f"FROM {relation.render()} AS t WHERE CASE WHEN {removal[0]} THEN 1 ELSE 0 END = 0",
            removal[1],
        ),
        *replacer(target).replace_partition(
            relation, None, None, f"SELECT {staged} FROM {stage.render()}", ()
        ),
    ]


def replacer(target: SwapHost) -> PartitionReplacer:
    """`target` as the `PartitionReplacer` its capabilities call for (the registry refuses a class
    that is none; this catches one opened without it)."""
    if not isinstance(target, PartitionReplacer):
        raise ConfigError(f"{type(target).__name__} is no PartitionReplacer, which its capabilities need")
    return target


def _partition(target: SwapHost, parts: Partitioning, row: str, staged: bool) -> str:
    return replacer(target).partition_sql(parts, row, staged)
