"""What a target can and cannot do, declared as data so the core adapts without naming targets."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class Casefold(StrEnum):
    """How a warehouse folds unquoted identifiers."""

    LOWER = "lower"
    UPPER = "upper"
    NONE = "none"

    def apply(self, name: str) -> str:
        """Fold `name` the way the warehouse folds an unquoted identifier."""
        if self is Casefold.LOWER:
            return name.lower()
        if self is Casefold.UPPER:
            return name.upper()
        return name


class Staging(StrEnum):
    """How the rows of a load reach the warehouse's staging relation."""

    FILES = "files"
    """The core writes them as Parquet files under `storage` (executors for a Spark frame) and
    the target loads the manifest (COPY, PUT + COPY, a load job, a local scan)."""
    EXECUTORS = "executors"
    """The target is handed the Spark frame and each task loads its own rows (COPY from the
    executors, files written by the tasks)."""


class FileFormat(StrEnum):
    """The format of the files `Staging.FILES` writes (the value is their file suffix)."""

    PARQUET = "parquet"
    JSON_LINES = "jsonl"
    """One JSON object per row, a key per non-NULL column; a column of Arrow's JSON type is
    embedded as a JSON value, not as text, for loaders that parse it into a semi-structured
    type (Redshift's COPY … FORMAT JSON 'auto' into SUPER)."""


class Schemas(StrEnum):
    """How a warehouse keeps each layout's tables apart (census, hightouch_audit, …)."""

    CREATE = "create"
    """Schemas exist: the core runs CREATE SCHEMA IF NOT EXISTS and names tables schema.table."""
    ATTACHED = "attached"
    """No CREATE SCHEMA, but a schema can be attached under its name (SQLite's ATTACH DATABASE of a
    file per schema): names stay schema.table, so the seeds' queries run unchanged; the core calls
    the target's `ensure_schema` instead of CREATE SCHEMA, and a view's body names its table
    without a schema (an attached database resolves a view's names in its own file)."""


@dataclass(frozen=True)
class Capabilities:
    """A target's abilities and limits; the core reads every field to decide what it does."""

    json_type: str
    """Physical column type that holds JSON payloads (JSON, JSONB, VARIANT, SUPER, STRING)."""
    casefold: Casefold = Casefold.LOWER
    identifier_quote: str = '"'
    """The character that quotes identifiers (a backtick on BigQuery, Databricks and MySQL); one
    inside a name is doubled. `Target.relation` and `SqlTarget.quote` use it."""
    max_identifier_length: int = 63
    three_part_names: bool = False
    """Whether relations are named database.schema.table (Snowflake, Databricks)."""
    transactions: bool = True
    """Whether statements commit together: a replace is then a DELETE and an INSERT in one transaction."""
    merge: bool = False
    """Whether MERGE INTO exists: a replace is one MERGE where there are no transactions."""
    partition_replace: bool = False
    """Whether the warehouse replaces the rows of one partition atomically, and nothing wider
    (ClickHouse's REPLACE PARTITION, Hive-style tables): where there are neither transactions nor
    MERGE, a replace rewrites each partition it touches in one statement of the target's
    (`PartitionReplacer`), and retention does the same with the expired rows."""
    replays_statements: bool = False
    """Whether the target's client may replay a statement (send it again when a dropped connection
    lost its answer), so that the warehouse may run it twice (Snowflake's connector retries its
    query requests, and so does Databricks' SQL connector). A replace's INSERT then adds only rows
    whose replace key the table does not hold, which its DELETE made true for all of them, so a
    replayed INSERT adds nothing (a replayed MERGE changes nothing by itself), and a load's rows
    are counted in its stage, since the answer to a replayed load says 0. The plugin's own steps
    must add nothing when replayed too (a stage created IF NOT EXISTS, a COPY that skips files
    it loaded)."""
    views: bool = True
    """Whether views exist; without them a table with a public view is stored under the view's name."""
    replace_view: bool = True
    """Whether CREATE OR REPLACE VIEW exists; else the core drops the view and creates it again
    (see `transactional_ddl`)."""
    transactional_ddl: bool = True
    """Whether DDL takes part in transactions, so a DROP VIEW and a CREATE VIEW commit together.
    Where DDL commits by itself (Snowflake, BigQuery, Databricks), the core never wraps DDL in a
    transaction, and a view without CREATE OR REPLACE is dropped and created again only when its
    columns changed (an additive migration): readers lose it for that moment only."""
    schemas: Schemas = Schemas.CREATE
    """How layouts' schemas are made (see `Schemas`)."""
    read_casts: bool = True
    """Whether CAST(x AS <declared type>) gives back a stored column's type. Where CAST follows type
    affinity instead (SQLite, whose timestamps are ISO-8601 text), read-backs select stored columns
    as they are and the core casts the Arrow result to the table's types."""
    partition_expiry: bool = False
    """Whether old day partitions can expire by themselves (BigQuery's partition_expiration_days):
    retention sets the expiry, then deletes what syncs with a shorter retention keep."""
    partition_drop: bool = False
    """Whether retention drops whole day partitions before deleting what remains expired."""
    staging: Staging = Staging.FILES
    staging_format: FileFormat = FileFormat.PARQUET
    """The format of the staged files (`Staging.FILES`)."""
    max_json_bytes: int | None = None
    """Largest payload a JSON value may hold; larger payloads are truncated with a marker."""
    run_metadata_columns: bool = True
    """Whether the source/destination id columns and the metadata tables are written."""
    fields_column: bool = True
    """Whether the hightouch layout's `fields` column is written."""
    layouts: tuple[str, ...] = ("census", "hightouch")
    """The layouts the target can hold; the first is written when the config names none."""
    exclusive: bool = False
    """Whether only one process at a time may have the target open (a DuckDB file): the loader
    that serves it (`synclog.loading`) opens it only while it loads, and a `BackgroundLog` that
    loads its own batches (no loader runs) warns that its engines' processes would take turns."""

    def as_rows(self) -> list[tuple[str, str]]:
        """(name, value) pairs, for `synclog plugins` and the generated docs matrix."""
        return [(f.name, _show(getattr(self, f.name))) for f in fields(self)]


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    if value is None:
        return "-"
    return str(value)
