"""Partition replace, for a warehouse atomic per partition only (`capabilities.partition_replace`,
without transactions or MERGE): every partition a load touches is rewritten in one statement.

A table with a time column is partitioned by that column's UTC day, one without but with a
`sync_id` by sync (snapshots are replaced per sync, runs per run of one sync), any other is one
partition (`partitioning_of`). A swap first asks which partitions hold replaced rows or receive
staged ones, and whether rows remain in each; then each one that keeps rows is rewritten from the
stage and its own kept rows (`PartitionReplacer.replace_partition`, one statement), and each one
left empty is dropped (`drop_partition`). Retention rewrites the days holding expired rows the same
way (`expired_statements`). The swap is atomic per partition: a failure between two partitions'
statements leaves the first rewritten, and a replay of the load converges.

The target gives the dialect: the SQL of a row's partition (`partition_sql`), and the one
statement that rewrites or drops one partition.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from synclog.errors import ConfigError
from synclog.naming import Relation
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
    ) -> Statement:
        """One statement after which partition `value` of `relation` (the whole table where
        `partitioning` is None) holds exactly the rows of the query `rows` (with `params`): the
        table's stored columns in order. For a partition, `rows` reads the stage and `relation`
        itself, and yields rows (a partition left empty is dropped instead); for a whole table it
        reads the stage only (the kept rows are in it by then), and yields no row where the table
        is to be emptied."""

    @abstractmethod
    def drop_partition(
        self, relation: Relation, partitioning: Partitioning, value: PartitionValue
    ) -> Statement:
        """One statement that removes partition `value` of `relation` with its rows."""

    @abstractmethod
    def partition_sql(self, partitioning: Partitioning, row: str, staged: bool) -> str:
        """SQL of the partition of the row aliased `row`: a staged row (`staged`), or one of the
        table (which may read the partition from a column of its own)."""


@dataclass(frozen=True)
class Removal:
    """The rows a rewrite leaves out: SQL over the table aliased `t` and its parameters, and a
    bound on `t` (with its own parameters) that every removed row meets."""

    sql: str
    params: list[Any] = field(default_factory=list)
    bound: str = "TRUE"
    bound_params: list[Any] = field(default_factory=list)


def statements(
    target: SwapHost, table: TableSpec, relation: Relation, stage: Relation, scope: Mapping[str, Any] | None
) -> list[Statement]:
    """The rewrite of every partition holding replaced or staged rows (asked first: one query)."""
    q = target.quote
    if scope:
        replaced = " AND ".join(f"t.{q(name)} = {target.placeholder}" for name in scope)
        removal = Removal(replaced, list(scope.values()))
    else:
        on = " AND ".join(f"s.{q(k)} = t.{q(k)}" for k in table.replace_key)
        removal = Removal(f"EXISTS (SELECT 1 FROM {stage.render()} AS s WHERE {on})")
    return rewrite(target, table, relation, removal, stage)[0]


def expired_statements(target: SwapHost, table: TableSpec, cutoffs: Cutoffs) -> tuple[list[Statement], int]:
    """Retention's rewrite: the days holding rows older than their sync's cut-off, without them
    (days that expire whole are dropped); and how many rows go."""
    assert table.time_column is not None
    q, p = target.quote, target.placeholder
    time, sync = q(table.time_column), q("sync_id")
    overridden = list(cutoffs.per_sync)
    exempt = f" AND t.{sync} NOT IN ({', '.join([p] * len(overridden))})" if overridden else ""
    clauses = [f"(t.{time} < {p}{exempt})"]
    params: list[Any] = [cutoffs.default, *overridden]
    for sync_id, cutoff in cutoffs.per_sync.items():
        clauses.append(f"(t.{sync} = {p} AND t.{time} < {p})")
        params += [sync_id, cutoff]
    parts = partitioning_of(table)
    assert parts is not None
    newest = max((cutoffs.default, *cutoffs.per_sync.values())).astimezone(UTC).date()
    bound = f"{_partition(target, parts, 't', staged=False)} <= {p}"
    removal = Removal(" OR ".join(clauses), params, bound, [newest])
    return rewrite(target, table, target.relation(table), removal, None)


def rewrite(
    target: SwapHost, table: TableSpec, relation: Relation, removal: Removal, stage: Relation | None
) -> tuple[list[Statement], int]:
    """Statements that leave `relation` without the rows `removal` matches and with the staged
    rows, partition by partition; and how many rows they remove."""
    parts = partitioning_of(table)
    if parts is None:
        assert stage is not None, "only tables with a time column expire"
        return _rewrite_whole(target, table, relation, removal, stage), 0
    t_part = _partition(target, parts, "t", staged=False)
    s_part = _partition(target, parts, "s", staged=True)
    hit = f"COALESCE(({removal.sql}), FALSE)"
    touched = (
        []
        if stage is None
        else [f"SELECT {s_part} AS p, 1 AS keep, 1 AS touch, 0 AS gone FROM {stage.render()} AS s"]
    )
    touched.append(
        "SELECT r.p AS p, CASE WHEN r.hit THEN 0 ELSE 1 END AS keep, CASE WHEN r.hit THEN 1 ELSE 0 END "
        f"AS touch, CASE WHEN r.hit THEN 1 ELSE 0 END AS gone FROM (SELECT {t_part} AS p, {hit} AS hit "
        f"FROM {relation.render()} AS t WHERE {removal.bound}) AS r"
    )
    summary = target.fetch(  # per partition touched: whether rows remain in it, and how many go
        f"SELECT u.p, MAX(u.keep), SUM(u.gone) FROM ({' UNION ALL '.join(touched)}) AS u "
        "GROUP BY u.p HAVING MAX(u.touch) = 1",
        [*removal.params, *removal.bound_params],
    )
    stored = [n for n in target.existing_columns(relation) or () if n.lower() not in COLUMNS]
    spec = {c.name.lower(): c for c in table.columns}
    statements: list[Statement] = []
    for value, keep, _ in summary:
        if not keep:
            continue
        selects, params = [], []
        if stage is not None:
            staged = ", ".join(
                target.staged_value_sql(spec[n.lower()]) if n.lower() in spec else "NULL" for n in stored
            )
            same = f"{s_part} IS NOT DISTINCT FROM {target.placeholder}"
            selects.append(f"SELECT {staged} FROM {stage.render()} AS s WHERE {same}")
            params.append(value)
        kept = ", ".join(f"t.{target.quote(n)}" for n in stored)
        selects.append(
            f"SELECT {kept} FROM {relation.render()} AS t "
            f"WHERE {t_part} IS NOT DISTINCT FROM {target.placeholder} AND NOT {hit}"
        )
        params += [value, *removal.params]
        statements.append(
            replacer(target).replace_partition(relation, parts, value, " UNION ALL ".join(selects), params)
        )
    statements += [
        replacer(target).drop_partition(relation, parts, value) for value, keep, _ in summary if not keep
    ]
    return statements, sum(int(gone) for _, _, gone in summary)


def _rewrite_whole(
    target: SwapHost, table: TableSpec, relation: Relation, removal: Removal, stage: Relation
) -> list[Statement]:
    """A table that is one partition: its kept rows join the staged ones in the stage (JSON as
    its text, as staged), then the stage's rows replace the table's."""
    names = [target.quote(c) for c in table.column_names()]
    kept = [
        target.json_text_sql(f"t.{q}") if c.type is ColumnType.JSON else f"t.{q}"
        for c, q in zip(table.columns, names, strict=True)
    ]
    staged = ", ".join(target.staged_value_sql(c) for c in table.columns)
    return [
        (
            f"INSERT INTO {stage.render()} ({', '.join(names)}) SELECT {', '.join(kept)} "
            f"FROM {relation.render()} AS t WHERE NOT COALESCE(({removal.sql}), FALSE)",
            removal.params,
        ),
        replacer(target).replace_partition(
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
