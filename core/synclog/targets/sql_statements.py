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


def create_table(
    relation: str, columns: Sequence[str], if_not_exists: bool = True, temporary: bool = False
) -> str:
    """`CREATE [TEMP] TABLE [IF NOT EXISTS] relation (column, …)`, each column a declaration
    (`"name" TYPE`)."""
    kind = "TEMP TABLE" if temporary else "TABLE"
    guard = "IF NOT EXISTS " if if_not_exists else ""
    return f"CREATE {kind} {guard}{relation} ({_listed(columns)})"


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


def insert_values(relation: str, columns: Sequence[str], placeholder: str) -> str:
    """`INSERT INTO relation (column, …) VALUES (p, …)`: one row, a value bound per column."""
    return f"INSERT INTO {relation} ({_listed(columns)}) VALUES ({_listed([placeholder] * len(columns))})"


def count_rows(relation: str) -> str:
    """`SELECT COUNT(*) FROM relation`."""
    return f"SELECT COUNT(*) FROM {relation}"


def select_where_equal(relation: str, expressions: Sequence[str], key: str, placeholder: str) -> str:
    """`SELECT expression, … FROM relation WHERE key = p` (a read-back of one sync, the versions
    of one table)."""
    return f"SELECT {_listed(expressions)} FROM {relation} WHERE {key} = {placeholder}"


# -- the swap ----------------------------------------------------------------------------------


def delete_where(relation: str, condition: str) -> str:
    """`DELETE FROM relation WHERE condition` (the replaced keys, as constants)."""
    return f"DELETE FROM {relation} WHERE {condition}"


def insert_select(
    target: str, columns: Sequence[str], values: Sequence[str], staged: str, where: str = ""
) -> str:
    """`INSERT INTO target (column, …) SELECT value, … FROM staged [WHERE where]`."""
    condition = f" WHERE {where}" if where else ""
    return f"INSERT INTO {target} ({_listed(columns)}) SELECT {_listed(values)} FROM {staged}{condition}"


def none_left(target: str, condition: str) -> str:
    """`(SELECT COUNT(*) FROM target WHERE condition) = 0`: the table holds no row the condition
    (the replaced keys) matches: the guard of an INSERT that a replay must not repeat."""
    return f"(SELECT COUNT(*) FROM {target} WHERE {condition}) = 0"


def merge_replacing(
    target: str,
    staged: str,
    columns: Sequence[str],
    values: Sequence[str],
    marker_values: Sequence[str],
    replaced: str,
    mark: str,
) -> str:
    """One MERGE that replaces the rows of `target` (aliased `t`) that `replaced` matches by the
    staged rows.

    The source is the staged rows (`values`, one per column, as `columns`) with `mark` FALSE, and
    one marker row (`marker_values`: typed NULLs) with `mark` TRUE, which every row `replaced`
    matches meets: it deletes them; a staged row meets none and is inserted. The condition on the
    table is constants only, so the warehouse prunes the table by them.
    """
    rows = _listed([f"{value} AS {column}" for value, column in zip(values, columns, strict=True)])
    marker = _listed([f"{value} AS {column}" for value, column in zip(marker_values, columns, strict=True)])
    source = f"SELECT {rows}, FALSE AS {mark} FROM {staged} UNION ALL SELECT {marker}, TRUE AS {mark}"
    inserted = _listed([f"s.{column}" for column in columns])
    return (
        f"MERGE INTO {target} AS t USING ({source}) AS s ON s.{mark} AND ({replaced}) "
        f"WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND NOT s.{mark} THEN INSERT ({_listed(columns)}) VALUES ({inserted})"
    )


# -- retention ---------------------------------------------------------------------------------


def delete_before(relation: str, time: str, placeholder: str, sync: str = "", exempt: int = 0) -> str:
    """`DELETE FROM relation WHERE time < p`, except the `exempt` syncs bound after the cut-off
    (`AND sync NOT IN (p, …)`)."""
    skip = f" AND {sync} NOT IN ({_listed([placeholder] * exempt)})" if exempt else ""
    return f"DELETE FROM {relation} WHERE {time} < {placeholder}{skip}"


def delete_sync_before(relation: str, sync: str, time: str, placeholder: str) -> str:
    """`DELETE FROM relation WHERE sync = p AND time < p`: one sync's rows older than its cut-off."""
    return f"DELETE FROM {relation} WHERE {sync} = {placeholder} AND {time} < {placeholder}"
