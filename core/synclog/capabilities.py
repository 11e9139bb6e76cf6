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
    """The target is handed the Spark frame and its executors load the rows (an `INSERT … SELECT`
    from the frame: `FrameLoader`)."""
    TASKS = "tasks"
    """Each Spark task puts its rows into the stage through the target's own writer, and the
    driver finishes the stage from the tasks' reports (COPY from the executors: `TaskLoader`)."""


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


class SwapStrategy(StrEnum):
    """How a SQL target replaces the rows a load carries once its stage is filled
    (`synclog.targets.swaps`): `Capabilities.swap` names one, else the first that applies."""

    DELETE_INSERT = "delete-insert"
    """[lock,] DELETE of the replaced keys, INSERT of the staged rows, in one transaction."""
    INSERT_MISSING = "insert-missing"
    """The same, the INSERT adding rows only while the table holds none of the replaced keys (a
    client that replays statements)."""
    MERGE = "merge"
    """One MERGE that deletes the rows of the replaced keys and inserts the staged rows."""
    PARTITION_REPLACE = "partition-replace"
    """Each partition touched rewritten in one step (`PartitionReplacer`)."""
    OWN = "own"
    """The target's own statements (`OwnSwap`), which the conformance suite holds to the same
    tests as every strategy."""


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
    swap: SwapStrategy | None = None
    """The swap strategy (`SwapStrategy`), checked against the capabilities when the target type
    is registered; None: the first that applies, in the order delete-and-insert (insert-only-
    missing where the client replays statements) with `transactions`, `merge`, `partition_replace`."""
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
    ctes: bool = True
    """Whether a query may start with WITH (common table expressions). The core's own reads use
    none; the demo and seed queries that do are skipped with one line where this is no."""
    window_functions: bool = True
    """Whether `… OVER (…)` exists (LAG, ROW_NUMBER): the demo's question and seed queries that
    need one are skipped with one line where this is no."""
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

    @property
    def swap_strategy(self) -> SwapStrategy | None:
        """The strategy `swap` names, else the first that applies (None: none does)."""
        if self.swap is not None:
            return self.swap
        if self.transactions:
            return SwapStrategy.INSERT_MISSING if self.replays_statements else SwapStrategy.DELETE_INSERT
        if self.merge:
            return SwapStrategy.MERGE
        if self.partition_replace:
            return SwapStrategy.PARTITION_REPLACE
        return None

    def swap_refusal(self) -> str | None:
        """Why these capabilities cannot replace rows with their swap strategy, in one line; None
        when they can."""
        strategy = self.swap_strategy
        if strategy is None:
            return NO_SWAP
        needed = _STRATEGY_NEEDS.get(strategy)
        if needed is not None and not getattr(self, needed):
            return f"declares swap = {strategy}, which needs {needed} = yes"
        if strategy is SwapStrategy.DELETE_INSERT and self.replays_statements:
            return (
                f"declares swap = {strategy} with replays_statements = yes: a replayed INSERT would add "
                f"its rows twice (choose {SwapStrategy.INSERT_MISSING} or {SwapStrategy.MERGE})"
            )
        return None

    def as_rows(self) -> list[tuple[str, str]]:
        """(name, value) pairs, for `synclog plugins` and the generated docs matrix (`swap` as the
        strategy it picks)."""
        shown = {"swap": self.swap_strategy}
        return [(f.name, _show(shown.get(f.name, getattr(self, f.name)))) for f in fields(self)]

    def lacking(self, *needed: str) -> str | None:
        """One line naming the first of the boolean capabilities `needed` this target lacks
        (`window_functions`), or None when it has them all."""
        for name in needed:
            if not getattr(self, name):
                return f"this target has no {_LABELS.get(name, name)} ({name} = no)"
        return None


_LABELS = {"ctes": "WITH queries (common table expressions)", "window_functions": "window functions (OVER)"}
"""How `Capabilities.lacking` names a capability."""
NO_SWAP = (
    "declares no transactions, no merge and no partition_replace, one of which picks how it replaces rows"
)
_STRATEGY_NEEDS = {
    SwapStrategy.DELETE_INSERT: "transactions",
    SwapStrategy.INSERT_MISSING: "transactions",
    SwapStrategy.MERGE: "merge",
    SwapStrategy.PARTITION_REPLACE: "partition_replace",
}
"""The capability each strategy of the core needs."""


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    if value is None:
        return "-"
    return str(value)
