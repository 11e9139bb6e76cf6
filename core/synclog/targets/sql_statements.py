"""SQL statement builders: each takes rendered relations, quoted identifiers and SQL expressions,
and returns SQL text (with `placeholder` where values are bound). None touches a connection.

`SqlTarget` (`synclog.targets.sql`) quotes the names, chooses the types and expressions its
warehouse needs, and runs what these return; a plugin can call them to build its own variants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Statement = tuple[str, Sequence[Any]]
"""One statement and its positional parameters."""


def _listed(items: Sequence[str]) -> str:
    """`a, b, c`."""
    return ", ".join(items)


# -- DDL ---------------------------------------------------------------------------------------


def create_schema(schema: str) -> str:
    """`CREATE SCHEMA IF NOT EXISTS schema`."""
    return f"CREATE SCHEMA IF NOT EXISTS {schema}"


def create_table(relation: str, columns: Sequence[str], if_not_exists: bool = True) -> str:
    """`CREATE TABLE [IF NOT EXISTS] relation (column, …)`, each column a declaration (`"name" TYPE`)."""
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return f"CREATE TABLE {guard}{relation} ({_listed(columns)})"


def add_column(relation: str, column: str) -> str:
    """`ALTER TABLE relation ADD COLUMN column` (a declaration)."""
    return f"ALTER TABLE {relation} ADD COLUMN {column}"


def drop_table(relation: str) -> str:
    """`DROP TABLE IF EXISTS relation`."""
    return f"DROP TABLE IF EXISTS {relation}"


def create_view(view: str, columns: Sequence[str], source: str, replace: bool) -> str:
    """`CREATE [OR REPLACE] VIEW view AS SELECT column, … FROM source`."""
    create = "CREATE OR REPLACE VIEW" if replace else "CREATE VIEW"
    return f"{create} {view} AS SELECT {_listed(columns)} FROM {source}"


def drop_view(view: str) -> str:
    """`DROP VIEW IF EXISTS view`."""
    return f"DROP VIEW IF EXISTS {view}"


# -- introspection -----------------------------------------------------------------------------


def table_columns(placeholder: str) -> str:
    """A table's column names in order, from `information_schema.columns` (binds schema, table)."""
    return (
        "SELECT column_name FROM information_schema.columns "
        f"WHERE table_schema = {placeholder} AND table_name = {placeholder} "
        "ORDER BY ordinal_position"
    )


def tables_like(placeholder: str, catalog: str = "") -> str:
    """The tables of a schema whose name is LIKE a pattern, from `[catalog.]information_schema.tables`
    (binds schema, pattern)."""
    prefix = f"{catalog}." if catalog else ""
    return (
        f"SELECT table_name FROM {prefix}information_schema.tables "
        f"WHERE table_schema = {placeholder} AND table_name LIKE {placeholder}"
    )


# -- rows --------------------------------------------------------------------------------------


def insert_values(relation: str, count: int, placeholder: str) -> str:
    """`INSERT INTO relation VALUES (p, …)`, `count` values bound in table order."""
    return f"INSERT INTO {relation} VALUES ({_listed([placeholder] * count)})"


def count_rows(relation: str) -> str:
    """`SELECT COUNT(*) FROM relation`."""
    return f"SELECT COUNT(*) FROM {relation}"


def max_where_equal(relation: str, column: str, key: str, placeholder: str) -> str:
    """`SELECT MAX(column) FROM relation WHERE key = p`."""
    return f"SELECT MAX({column}) FROM {relation} WHERE {key} = {placeholder}"


def select_where_equal(relation: str, expressions: Sequence[str], key: str, placeholder: str) -> str:
    """`SELECT expression, … FROM relation WHERE key = p` (a read-back of one sync)."""
    return f"SELECT {_listed(expressions)} FROM {relation} WHERE {key} = {placeholder}"


# -- the swap ----------------------------------------------------------------------------------


def delete_where_equal(relation: str, columns: Sequence[str], placeholder: str) -> str:
    """`DELETE FROM relation WHERE column = p AND …` (a scope, bound in `columns`' order)."""
    where = " AND ".join(f"{column} = {placeholder}" for column in columns)
    return f"DELETE FROM {relation} WHERE {where}"


def delete_matching_keys(target: str, staged: str, key: Sequence[str]) -> str:
    """`DELETE FROM target WHERE (key, …) IN (SELECT DISTINCT key, … FROM staged)`."""
    columns = _listed(key)
    return f"DELETE FROM {target} WHERE ({columns}) IN (SELECT DISTINCT {columns} FROM {staged})"


def insert_select(target: str, columns: Sequence[str], values: Sequence[str], staged: str) -> str:
    """`INSERT INTO target (column, …) SELECT value, … FROM staged`."""
    return f"INSERT INTO {target} ({_listed(columns)}) SELECT {_listed(values)} FROM {staged}"


def insert_select_absent(
    target: str, columns: Sequence[str], values: Sequence[str], staged: str, matches: Sequence[str]
) -> str:
    """`INSERT INTO target (column, …) SELECT value, … FROM staged AS s WHERE NOT EXISTS (SELECT 1
    FROM target AS t WHERE match AND …)`: after the swap's DELETE every staged row goes in; run a
    second time, none does (`matches`: conditions on `t.` and `s.` columns, or bound scope values)."""
    return (
        f"INSERT INTO {target} ({_listed(columns)}) SELECT {_listed(values)} FROM {staged} AS s "
        f"WHERE NOT EXISTS (SELECT 1 FROM {target} AS t WHERE {' AND '.join(matches)})"
    )


def merge_replacing(
    target: str,
    staged: str,
    columns: Sequence[str],
    values: Sequence[str],
    markers: str,
    marker_values: Sequence[str],
    key: Sequence[str],
    mark: str,
) -> str:
    """One MERGE that replaces the rows of `target` whose `key` a marker row names by the staged rows.

    The source is the staged rows (`values`, one per column, as `columns`) with `mark` FALSE,
    and one row per key of the `markers` query (`marker_values`: the key, else a typed NULL)
    with `mark` TRUE: a marker deletes the matching rows, a staged row is inserted.
    """
    rows = _listed([f"{value} AS {column}" for value, column in zip(values, columns, strict=True)])
    source = (
        f"SELECT {rows}, FALSE AS {mark} FROM {staged} "
        f"UNION ALL SELECT {_listed(marker_values)}, TRUE AS {mark} FROM ({markers}) AS m"
    )
    on = " AND ".join(f"t.{k} = s.{k}" for k in key)
    inserted = _listed([f"s.{column}" for column in columns])
    return (
        f"MERGE INTO {target} AS t USING ({source}) AS s ON {on} AND s.{mark} "
        f"WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND NOT s.{mark} THEN INSERT ({_listed(columns)}) VALUES ({inserted})"
    )


def distinct_keys(staged: str, key: Sequence[str]) -> str:
    """`SELECT DISTINCT key, … FROM staged`: the marker rows of a keyed MERGE."""
    return f"SELECT DISTINCT {_listed(key)} FROM {staged}"


def select_values(values: Sequence[str], names: Sequence[str]) -> str:
    """`SELECT value AS name, …`: one row of expressions (a scope's marker row)."""
    return f"SELECT {_listed([f'{v} AS {n}' for v, n in zip(values, names, strict=True)])}"


# -- retention ---------------------------------------------------------------------------------


def delete_before(relation: str, time: str, placeholder: str, sync: str = "", exempt: int = 0) -> str:
    """`DELETE FROM relation WHERE time < p`, except the `exempt` syncs bound after the cut-off
    (`AND sync NOT IN (p, …)`)."""
    skip = f" AND {sync} NOT IN ({_listed([placeholder] * exempt)})" if exempt else ""
    return f"DELETE FROM {relation} WHERE {time} < {placeholder}{skip}"


def delete_sync_before(relation: str, sync: str, time: str, placeholder: str) -> str:
    """`DELETE FROM relation WHERE sync = p AND time < p`: one sync's rows older than its cut-off."""
    return f"DELETE FROM {relation} WHERE {sync} = {placeholder} AND {time} < {placeholder}"
