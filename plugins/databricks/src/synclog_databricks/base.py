"""What both Databricks targets share: Unity Catalog names, Spark SQL types and DDL, JSON types.

Both speak Spark SQL (Databricks SQL is Spark SQL): inside a cluster through `spark.sql`, outside
through a SQL warehouse. Relations are `catalog`.`schema`.`table`, quoted with backticks; the
catalog must exist (synclog creates schemas, tables and views, never catalogs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import ClassVar

from synclog.plugin_api import (
    STAGE_PREFIX,
    Capabilities,
    Column,
    ColumnType,
    ConfigError,
    Relation,
    SqlClient,
    SqlDialect,
    SqlTarget,
    TableSpec,
    TargetSettings,
    TargetURL,
)


class DatabricksDialect(SqlDialect):
    """Spark SQL types and `USING` tables; JSON staged as text, parsed where the tables hold VARIANT."""

    type_names = {**SqlDialect.type_names, ColumnType.INTEGER: "INT", ColumnType.STRING: "STRING"}
    table_format: ClassVar[str] = "DELTA"
    """The `USING` clause of the tables this dialect creates."""

    @property
    def variant(self) -> bool:
        """Whether JSON columns are VARIANT (else STRING holding JSON text)."""
        return self.capabilities.json_type == "VARIANT"

    def table_options(self, table: TableSpec) -> str:
        return f"USING {self.table_format}"

    def stage_options(self, table: TableSpec) -> str:
        """Stages are tables of the same format (a Parquet session has no Delta)."""
        return self.table_options(table)

    def stage_type(self, column: Column) -> str:
        """The stage holds JSON as text; the swap parses it where the tables hold VARIANT."""
        return "STRING" if column.type is ColumnType.JSON else self.type_name(column.type)

    def staged_value_sql(self, column: Column) -> str:
        if self.variant and column.type is ColumnType.JSON:
            return f"PARSE_JSON({self.quote(column.name)})"
        return self.quote(column.name)

    def json_text_sql(self, expression: str) -> str:
        """TO_JSON for VARIANT (a cast to STRING gives a JSON string's value without its quotes);
        the inner cast types the NULL a missing column reads as."""
        if self.variant:
            return f"TO_JSON(CAST({expression} AS VARIANT))"
        return super().json_text_sql(expression)


class DatabricksTarget(SqlTarget):
    """Spark SQL DDL and names; subclasses bring the client (in a `DatabricksDialect`) and the load."""

    def __init__(
        self,
        url: TargetURL,
        settings: TargetSettings,
        capabilities: Capabilities,
        catalog: str,
        client: SqlClient,
    ) -> None:
        super().__init__(url, replace(settings, database=catalog), capabilities, client)

    # -- DDL -----------------------------------------------------------------------------------

    def ensure(self, tables: Sequence[TableSpec]) -> None:
        """Create what is missing; an existing table must store JSON as the `json` option says."""
        for table in tables:
            spec = self.table_spec(table)
            relation = self.relation(spec)
            stored = dict(self.described(relation) or ())
            for column in spec.columns:
                kind = stored.get(column.name, "").upper()
                if column.type is ColumnType.JSON and kind and kind != self.capabilities.json_type:
                    raise ConfigError(
                        f"{relation} stores {column.name} as {kind}: set the target's option "
                        f"json = {kind.lower()!r}, or write into another catalog or schema"
                    )
        super().ensure(tables)

    def described(self, relation: Relation) -> list[tuple[str, str]] | None:
        """(name, type) of each column of `relation` in order, or None when it does not exist."""
        if relation.parts[-1] not in self._tables(relation):
            return None
        columns = []
        for row in self.client.fetch(f"DESCRIBE TABLE {relation.render()}"):
            if not row[0] or str(row[0]).startswith("#"):
                break  # partition information follows
            columns.append((str(row[0]).lower(), str(row[1]).lower()))
        return columns

    def find_stages(self, relation: Relation) -> list[tuple[Relation, datetime | None]]:
        """The schema's staging tables, from SHOW TABLES (which tells no creation time)."""
        return [
            (relation.with_name(name), None)
            for name in self._tables(relation)
            if name.startswith(STAGE_PREFIX)
        ]

    def _tables(self, relation: Relation) -> list[str]:
        """The (not temporary) tables of the schema of `relation`, none where it does not exist.

        Schemas and tables are listed rather than probed, so a missing one is no error to catch.
        """
        catalog, schema, _ = relation.parts
        schemas = self.client.fetch(f"SHOW SCHEMAS IN {relation.quoted(catalog)}")
        if schema not in {str(row[0]).lower() for row in schemas}:
            return []
        tables = self.client.fetch(f"SHOW TABLES IN {relation.schema_relation()}")
        return [str(row[1]).lower() for row in tables if not row[2]]

    def existing_columns(self, relation: Relation) -> list[str] | None:
        described = self.described(relation)
        return None if described is None else [name for name, _ in described]
