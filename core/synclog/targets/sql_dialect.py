"""The dialect of a target's SQL: types, identifiers, casts, table and view DDL, keys, parameters.

A `SqlDialect` only returns SQL text (and binds parameters into the driver's form); it never
touches a connection. Every target has one (`Target.dialect`: the SQL its `query` speaks); a SQL
target's is its client's (`SqlClient.dialect`), through which every statement it sends is bound,
and every type name, quoted name, cast, CREATE TABLE and key match of the core is written. A
plugin subclasses it where its warehouse's SQL differs: `type_names` for the types that are not
the standard ones, `placeholder` for a `%s` driver, `marker` for a driver with named (typed)
parameters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, final

from synclog.capabilities import Capabilities
from synclog.naming import Relation
from synclog.targets import sql_statements as sql
from synclog.targets.keys import Keys, match_sql
from synclog.targets.tables import Column, ColumnType, TableSpec

Params = Sequence[Any] | Mapping[str, Any]
"""Parameters as a driver takes them: positional, or by name (`SqlDialect.marker`)."""


class SqlDialect:
    """How one warehouse spells types, names, casts, tables and parameters (the standard SQL by
    default). Built from the target's capabilities (JSON type, case folding, identifier quote)."""

    type_names: ClassVar[Mapping[ColumnType, str]] = {
        ColumnType.BIGINT: "BIGINT",
        ColumnType.INTEGER: "INTEGER",
        ColumnType.STRING: "VARCHAR",
        ColumnType.TIMESTAMP: "TIMESTAMP",
        ColumnType.BOOLEAN: "BOOLEAN",
    }
    """Physical types of every logical type but JSON (`capabilities.json_type`); a dialect gives
    the ones that differ: `{**SqlDialect.type_names, ColumnType.STRING: "TEXT"}`."""

    placeholder: ClassVar[str] = "?"
    """The positional marker the core writes where a value is bound (`%s` for psycopg and other
    `format` drivers). With `named` set the core still writes it, and `bind` renames each one."""

    named: ClassVar[bool] = False
    """The driver takes named parameters only: `bind` turns each positional marker into
    `marker(name, value)` and the values into a mapping (`p0`, `p1`, …)."""

    temporary_stages: ClassVar[bool] = False
    """Stages are temporary tables of the session (`CREATE TEMP TABLE`: DuckDB, Redshift): a
    writer that dies leaves none behind."""

    text: ClassVar[str] = r"""'(?:''|[^'])*'|"(?:""|[^"])*"|`[^`]*`|--[^\n]*|/\*.*?\*/"""
    """A regular expression of the SQL text a marker in which is no marker (string literals,
    quoted names, comments), which `bind` leaves alone."""

    def __init__(self, capabilities: Capabilities) -> None:
        self.capabilities = capabilities

    # -- names and types ---------------------------------------------------------------------

    @final
    def quote(self, name: str) -> str:
        """One identifier, folded and quoted the warehouse's way."""
        caps = self.capabilities
        return Relation(schema="s", name="n", quote=caps.identifier_quote).quoted(caps.casefold.apply(name))

    @final
    def type_name(self, type_: ColumnType) -> str:
        """The physical type a column of a logical type is declared with (`type_names`)."""
        return self.capabilities.json_type if type_ is ColumnType.JSON else self.type_names[type_]

    def column_sql(self, column: Column) -> str:
        """`"name" TYPE`: every column the core declares (CREATE TABLE, ADD COLUMN, the versions table)."""
        return f"{self.quote(column.name)} {self.type_name(column.type)}"

    def cast_sql(self, expression: str, type_: ColumnType) -> str:
        """`expression` as a value of a logical type: every CAST the core writes (read-backs with
        `read_casts`, `json_text_sql`, typed NULLs). Override where CAST takes other type names
        than column declarations do."""
        return f"CAST({expression} AS {self.type_name(type_)})"

    def json_text_sql(self, expression: str) -> str:
        """SQL that turns a JSON value into its JSON text (override where a cast does not)."""
        return self.cast_sql(expression, ColumnType.STRING)

    # -- DDL ---------------------------------------------------------------------------------

    def create_table_sql(self, relation: Relation, table: TableSpec) -> str:
        """CREATE TABLE IF NOT EXISTS for a framework table: its columns (`column_sql`), then its
        `table_options`. Override where the table needs more (a partition column of its own)."""
        create = sql.create_table(relation.render(), [self.column_sql(c) for c in table.columns])
        options = self.table_options(table)
        return f"{create} {options}" if options else create

    def table_options(self, table: TableSpec) -> str:
        """What follows the columns of a CREATE TABLE: partitioning, a sort key, clustering, a
        storage format or an engine (`PARTITION BY RANGE (time)`, `USING DELTA`, `ENGINE =
        MergeTree ORDER BY …`). Nothing by default."""
        return ""

    def create_schema_sql(self, relation: Relation) -> str:
        """CREATE SCHEMA for the schema `relation` lives in."""
        return sql.create_schema(relation.schema_relation())

    def drop_view_sql(self, view: Relation) -> str:
        """The statement that drops a view that may not exist, which the core runs before creating
        it again where there is no CREATE OR REPLACE VIEW (`replace_view = no`)."""
        return sql.drop_view(view.render())

    # -- the stage ---------------------------------------------------------------------------

    def create_stage_sql(self, stage: Relation, table: TableSpec) -> str:
        """CREATE [TEMP] TABLE for the stage of a load of `table` (`temporary_stages`): its columns
        (`stage_type`), then `stage_options`; IF NOT EXISTS where the client replays statements
        (the stage's name is new, so the one that can exist is this statement's own, run before
        by a replay)."""
        columns = [f"{self.quote(c.name)} {self.stage_type(c)}" for c in table.columns]
        create = sql.create_table(
            stage.render(),
            columns,
            if_not_exists=self.capabilities.replays_statements,
            temporary=self.temporary_stages,
        )
        options = self.stage_options(table)
        return f"{create} {options}" if options else create

    def stage_options(self, table: TableSpec) -> str:
        """What follows the columns of a stage's CREATE TABLE: a storage format or an engine
        (`USING DELTA`, `ENGINE = Memory`). Nothing by default: a stage is not partitioned or
        sorted like its table."""
        return ""

    def stage_type(self, column: Column) -> str:
        """The physical type of `column` in the stage (the stored type by default)."""
        return self.type_name(column.type)

    def staged_value_sql(self, column: Column) -> str:
        """How a staged column becomes the stored value (a JSON parse where the stage holds text)."""
        return self.quote(column.name)

    # -- the swap ----------------------------------------------------------------------------

    def keys_sql(self, keys: Keys, row: str = "") -> tuple[str, list[Any]]:
        """SQL true of a row whose key `keys` holds (columns of `row`, an alias, or unqualified)
        and its parameters: the constants every swap matches the table with, so that the
        warehouse prunes it by them (`synclog.targets.keys.match_sql`: equalities, ranges, IN).
        Override where the warehouse prunes better by another form (a VALUES list)."""
        return match_sql(keys, row, self.quote, self.placeholder)

    # -- parameters --------------------------------------------------------------------------

    def marker(self, name: str, value: Any) -> str:
        """The named marker of one parameter (with `named`): `:p0`, the DB-API's `named` style, by
        default; `@p0` (BigQuery), `{p0:Int64}` (ClickHouse, typed by `value`)."""
        return f":{name}"

    @final
    def bind(self, statement: str, params: Sequence[Any]) -> tuple[str, Params]:
        """`statement` and `params` as the driver takes them: as they are for a positional driver;
        with `named`, every `placeholder` outside literals, quoted names and comments renamed by
        `marker`, and the values by name. The core binds all its SQL through here."""
        if not self.named:
            return statement, params
        values = list(params)
        named: dict[str, Any] = {}

        def rename(match: re.Match[str]) -> str:
            if match.group(0) != self.placeholder:
                return match.group(0)
            index = len(named)
            if index == len(values):
                raise ValueError(f"the statement has more markers than its {len(values)} parameters")
            named[f"p{index}"] = values[index]
            return self.marker(f"p{index}", values[index])

        tokens = re.compile(f"{self.text}|{re.escape(self.placeholder)}", re.S)
        renamed = tokens.sub(rename, statement)
        if len(named) != len(values):
            raise ValueError(f"the statement has {len(named)} markers for {len(values)} parameters")
        return renamed, named
