"""The keys a load replaces, as constants: what a write knows it replaces, passed down to the swap.

A write knows which rows it replaces before it touches the warehouse: the batches of each run it
carries (the run store's reports of its job), the scope of a run-level load (one sync, one run),
the ids of the few rows built on the driver. `Keys` holds them as values, and every swap matches
the table's rows against those values (`match_sql`: parameters in the statement), never against
the staged rows: so the warehouse prunes the table by them (partitions, clusters, an index) and a
write reads its own run's data, not the table.

`Keys` is grouped for what loads look like: per group the leading key columns are fixed and the
last one takes any of a set of values, e.g. `(sync_id = 1 AND sync_run_id = 10 AND batch_number
IN (0, 1, 2))`. Many runs of many syncs (a loader that coalesces queued batches into one stage)
are many groups of one `Keys`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from synclog.targets.rows import Rows
from synclog.targets.tables import TableSpec

MAX_KEY_PARAMETERS = 1000
"""The most values `match_sql` binds as parameters; integer values beyond it are written as
integer literals (every key column of the layouts is an integer), so that a swap of many runs
stays within every warehouse's limit on a statement's parameters."""
_RANGE = 3
"""Consecutive integers from this many on are matched as one range (`BETWEEN`)."""


@dataclass(frozen=True)
class KeyGroup:
    """Rows whose leading key columns equal `fixed` and whose last key column is any of `last`."""

    fixed: tuple[Any, ...]
    last: tuple[Any, ...]


@dataclass(frozen=True)
class RunBatches:
    """The batches a write carries of one run: what its replaced keys follow from."""

    org_id: int
    sync_id: int
    sync_run_id: int
    batches: tuple[int, ...]

    def value(self, column: str, batch: int) -> Any:
        """The value of key column `column` for the rows of `batch`."""
        values = {
            "org_id": self.org_id,
            "sync_id": self.sync_id,
            "sync_run_id": self.sync_run_id,
            "batch_number": batch,
        }
        if column not in values:
            raise ValueError(f"a key column {column!r} does not follow from a run's batches")
        return values[column]


@dataclass(frozen=True)
class Keys:
    """The keys a load replaces: every row of the table whose `columns` match a group goes, also
    when no loaded row has its key, and the loaded rows come in. No group: nothing is replaced."""

    columns: tuple[str, ...]
    groups: tuple[KeyGroup, ...] = ()

    def __post_init__(self) -> None:
        if not self.columns:
            raise ValueError("keys name at least one column")
        for group in self.groups:
            if len(group.fixed) != len(self.columns) - 1 or not group.last:
                raise ValueError(f"a key group of {self.columns} has the wrong shape: {group}")

    @classmethod
    def of_values(cls, columns: Sequence[str], values: Iterable[Sequence[Any]]) -> Keys:
        """The keys of `values` (one tuple per row, in `columns`' order), grouped by all but the
        last column; tuples holding a NULL are left out (a NULL key matches no row)."""
        grouped: dict[tuple[Any, ...], set[Any]] = {}
        for value in values:
            key = tuple(value)
            if len(key) != len(columns):
                raise ValueError(f"a key of {tuple(columns)} has {len(key)} values")
            if any(v is None for v in key):
                continue
            grouped.setdefault(key[:-1], set()).add(key[-1])
        groups = (KeyGroup(fixed, tuple(sorted(last))) for fixed, last in grouped.items())
        return cls(tuple(columns), tuple(sorted(groups, key=lambda g: g.fixed)))

    @classmethod
    def scope(cls, values: Mapping[str, Any]) -> Keys:
        """Every row whose columns hold `values` (a run-level load's scope: one sync, one run)."""
        return cls.of_values(tuple(values), [tuple(values.values())])

    @classmethod
    def of_batches(cls, columns: Sequence[str], runs: Iterable[RunBatches]) -> Keys:
        """The keys of the rows the batches of `runs` hold, for a table keyed by `columns` (a
        run's org, sync and run ids and a batch number: census `sync_log`, the lake's records)."""
        return cls.of_values(
            columns, (tuple(run.value(c, b) for c in columns) for run in runs for b in run.batches)
        )

    @classmethod
    def of_rows(cls, table: TableSpec, rows: Rows) -> Keys:
        """The replace keys of rows built on the driver (`Rows.local`)."""
        local = rows.local_table
        if local is None:
            raise ValueError(f"{table}: the keys of rows a Spark frame computes are the write's to give")
        key = table.replace_key
        return cls.of_values(key, zip(*(local.column(c).to_pylist() for c in key), strict=True))

    @property
    def empty(self) -> bool:
        """Whether no row is replaced (only the loaded rows come in)."""
        return not self.groups


def load_keys(table: TableSpec, rows: Rows, scope: Mapping[str, Any], runs: Sequence[RunBatches]) -> Keys:
    """What a layout's load replaces: its `scope` where it has one, else the replace keys of rows
    built on the driver, else those of the batches of `runs` (the write's)."""
    if scope:
        return Keys.scope(scope)
    if rows.local_table is not None:
        return Keys.of_rows(table, rows)
    if not runs:
        raise ValueError(f"{table}: a load of a Spark frame needs the batches it replaces")
    return Keys.of_batches(table.replace_key, runs)


def match_sql(keys: Keys, row: str, quote: Callable[[str], str], placeholder: str) -> tuple[str, list[Any]]:
    """SQL that is true of a row (aliased `row`; no alias where empty) whose key `keys` holds, and
    its parameters: `(a = p AND b = p AND (c BETWEEN p AND p OR c IN (p, …))) OR (…)`; `1 = 0`
    without keys. Runs of consecutive integers are ranges; past `MAX_KEY_PARAMETERS` values,
    integers are written as literals (any other value there is a bug, and raises)."""
    if keys.empty:
        return "1 = 0", []
    prefix = f"{row}." if row else ""
    names = [prefix + quote(c) for c in keys.columns]
    params: list[Any] = []

    def value(v: Any) -> str:
        if len(params) < MAX_KEY_PARAMETERS:
            params.append(v)
            return placeholder
        if type(v) is not int:
            raise ValueError(f"{len(params)} key values bound already; {v!r} cannot be written as a literal")
        return str(v)

    clauses = []
    for group in keys.groups:
        fixed = [f"{name} = {value(v)}" for name, v in zip(names, group.fixed, strict=False)]
        clauses.append("(" + " AND ".join([*fixed, _any_of(names[-1], group.last, value)]) + ")")
    return " OR ".join(clauses), params


def _any_of(name: str, values: tuple[Any, ...], value: Callable[[Any], str]) -> str:
    """`name` is one of `values`: ranges of consecutive integers, then the rest in one IN."""
    ranges, singles = _runs(values)
    parts = [f"{name} BETWEEN {value(lo)} AND {value(hi)}" for lo, hi in ranges]
    if len(singles) == 1:
        parts.append(f"{name} = {value(singles[0])}")
    elif singles:
        parts.append(f"{name} IN ({', '.join(value(v) for v in singles)})")
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def _runs(values: tuple[Any, ...]) -> tuple[list[tuple[int, int]], list[Any]]:
    """`values` (sorted) as ranges of `_RANGE` or more consecutive integers, and the others."""
    if not all(type(v) is int for v in values):
        return [], list(values)
    ranges: list[tuple[int, int]] = []
    singles: list[Any] = []
    start = 0
    for end in range(1, len(values) + 1):
        if end < len(values) and values[end] == values[end - 1] + 1:
            continue
        run = values[start:end]
        if len(run) >= _RANGE:
            ranges.append((run[0], run[-1]))
        else:
            singles.extend(run)
        start = end
    return ranges, singles
