"""The input contract: a sync run, the objects it connects, and the vocabularies of records."""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from synclog.errors import InputError

E = TypeVar("E", bound=StrEnum)
T = TypeVar("T")


class Behaviour(StrEnum):
    """How a sync writes to its destination."""

    UPDATE = "update"
    UPSERT = "upsert"
    CREATE = "create"
    APPEND = "append"
    MIRROR = "mirror"
    DELETE = "delete"


class Operation(StrEnum):
    """What the engine did, or planned to do, with one record."""

    UPSERT = "upsert"
    UPDATE = "update"
    CREATE = "create"
    DELETE = "delete"
    APPEND = "append"
    MIRROR = "mirror"


class InputStatus(StrEnum):
    """The outcome the sync engine reports for one record."""

    SUCCEEDED = "succeeded"
    REJECTED = "rejected"
    ABORTED = "aborted"


class InvalidReason(StrEnum):
    """Why the identifier check flagged a record (the canonical `invalid_reason`)."""

    NULL = "NULL"
    DUPLICATE = "DUPLICATE"


class RecordStatus(StrEnum):
    """How a write counts a record (`WriteResult.statuses`): the destination's outcome, or the
    identifier check's flag, which comes first in the counts (as in Sync Tracking's `invalid`).

    The log tables keep the two apart: the canonical `status` is always the engine's outcome
    (succeeded, rejected or aborted) and `invalid_reason` the flag (`InvalidReason`)."""

    SUCCEEDED = "succeeded"
    REJECTED = "rejected"
    ABORTED = "aborted"
    INVALID_NULL = "invalid_null"
    INVALID_DUPLICATE = "invalid_duplicate"

    @classmethod
    def counted(cls, status: str, invalid_reason: str | None) -> RecordStatus:
        """The count a record with the canonical `status` and `invalid_reason` goes to."""
        if invalid_reason is None:
            return cls(status)
        return cls(f"invalid_{invalid_reason.lower()}")


class RunStatus(StrEnum):
    """How a run as a whole ended.

    `succeeded`: the engine ended the run without error (rejected records are the records'
    outcomes, not the run's). `failed`: the engine reports the run ended with an error and no
    record reached the destination. `partial`: it ended with an error after some records did
    (`SyncLog.finish` turns a `failed` run with succeeded records into `partial`). `running`:
    not ended yet.
    """

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"


@dataclass(frozen=True)
class SourceObject:
    """What a sync reads from: a table, model, entity, segment or cohort (Census' source_objects)."""

    id: int
    type: str
    name: str
    model_id: int | None = None
    business_object_id: int | None = None
    filter_segment_id: int | None = None
    cohort_id: int | None = None
    lineage_namespace: str | None = None
    """With `lineage_name`: the dataset OpenLineage events name as the run's input, by the
    OpenLineage naming spec (`postgres://db.example.com:5432` and `app.public.users`);
    without them, a form that names the object by synclog's ids (docs/engines/notices.md)."""
    lineage_name: str | None = None

    def __post_init__(self) -> None:
        _both_or_neither(self)


@dataclass(frozen=True)
class Connection:
    """A source or destination connection, e.g. a warehouse or `Salesforce::Connection`."""

    id: int
    type: str
    name: str = ""


@dataclass(frozen=True)
class DestinationObject:
    """The object a sync writes to inside its destination, e.g. a Salesforce Contact."""

    id: int
    type: str
    name: str
    lineage_namespace: str | None = None
    """With `lineage_name`: the dataset OpenLineage events name as the run's output
    (`https://api.example.com` and `/contacts`); without them, synclog's ids name it."""
    lineage_name: str | None = None

    def __post_init__(self) -> None:
        _both_or_neither(self)


def _both_or_neither(thing: SourceObject | DestinationObject) -> None:
    """An object names its OpenLineage dataset whole (namespace and name) or not at all."""
    if (thing.lineage_namespace is None) != (thing.lineage_name is None) or "" in (
        thing.lineage_namespace,
        thing.lineage_name,
    ):
        raise InputError(
            f"{type(thing).__name__} {thing.id}: give lineage_namespace and lineage_name together, or neither"
        )


@dataclass(frozen=True)
class Run:
    """One execution of a sync: everything about it except the per-record results.

    Build it in code with keyword arguments, or read it with `from_file` / `from_dict`. Ids are
    integers (the log tables' keys); an engine that names things by strings maps each name
    with `synclog.stable_id` and keeps the name itself in the objects' `name` and in `extra`:

    >>> Run(
    ...     org_id=stable_id("acme"), workspace_id=stable_id("acme/prod"),
    ...     sync_id=stable_id("users_to_crm"), sync_run_id=stable_id(run_uuid),
    ...     primary_key="email", behaviour=Behaviour.UPSERT,
    ...     source=Connection(stable_id("warehouse"), "Postgres::Connection", "warehouse"),
    ...     source_object=SourceObject(stable_id("public.users"), "Table", "public.users"),
    ...     destination=Connection(stable_id("crm"), "HTTP::Connection", "crm"),
    ...     destination_object=DestinationObject(stable_id("contacts"), "Contact", "contacts"),
    ...     started_at=datetime.now(UTC),
    ...     extra={"sync_name": "users_to_crm", "run_id": run_uuid},
    ... )
    """

    org_id: int
    workspace_id: int
    sync_id: int
    sync_run_id: int
    primary_key: str
    behaviour: Behaviour
    source: Connection
    source_object: SourceObject
    destination: Connection
    destination_object: DestinationObject
    started_at: datetime
    model_id: int | None = None
    model_name: str | None = None
    finished_at: datetime | None = None
    status: RunStatus = RunStatus.SUCCEEDED
    error: str | None = None
    full_model: bool = False
    """The records hold every row of the model (a mirror handing over the whole model): a row
    the sync's previous snapshot holds and the records lack has left the model (`removed`)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """The engine's own fields of the run (JSON-ready), e.g. its sync name and run UUID: kept in
    the run store while the run is open, then in the lake's metadata.json and hightouch's
    `sync_runs.extra`; `synclog runs` and the page show them."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        """Build a run from parsed JSON/TOML, naming the first missing or malformed key."""
        try:
            return _run_from_dict(data)
        except InputError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"run description: {_describe(exc)}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> Run:
        """Read a run description from a `.json` or `.toml` file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read run description {path}: {exc.strerror}") from None
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InputError(f"run description {path} is not valid: {exc}") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form `from_dict` reads back."""
        data = asdict(self)
        for key in ("started_at", "finished_at"):
            if data[key] is not None:
                data[key] = data[key].isoformat()
        return data


def as_utc(moment: datetime) -> datetime:
    """The same moment as an aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return str(exc)


def _integer(data: dict[str, Any], key: str, *, optional: bool = False) -> int | None:
    value = data.get(key) if optional else data[key]
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"run description: {key!r} must be an integer, got {value!r}")
    return value


def _flag(data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise InputError(f"run description: {key!r} must be true or false, got {value!r}")
    return value


def _timestamp(data: dict[str, Any], key: str, *, optional: bool = False) -> datetime | None:
    value = data.get(key) if optional else data[key]
    if value is None and optional:
        return None
    if isinstance(value, datetime):
        return as_utc(value)
    if not isinstance(value, str):
        raise InputError(f"run description: {key!r} must be an ISO-8601 timestamp, got {value!r}")
    try:
        return as_utc(datetime.fromisoformat(value))
    except ValueError:
        raise InputError(f"run description: {key!r} must be an ISO-8601 timestamp, got {value!r}") from None


def _enum(kind: type[E], data: dict[str, Any], key: str, default: E | None = None) -> E:
    value = data.get(key, default) if default is not None else data[key]
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise InputError(f"run description: {key!r} is {value!r}, expected one of {allowed}") from None


def _object(kind: type[T], data: dict[str, Any], key: str) -> T:
    part = data[key]
    if not isinstance(part, dict):
        raise InputError(f"run description: {key!r} must be an object, got {part!r}")
    known = {f.name for f in fields(kind)}  # type: ignore[arg-type]
    unknown = sorted(set(part) - known)
    if unknown:
        raise InputError(f"run description: unknown key {key}.{unknown[0]!r}")
    values: dict[str, Any] = {}
    for f in fields(kind):  # type: ignore[arg-type]
        if f.name == "id" or f.name.endswith("_id"):
            values[f.name] = _integer(part, f.name, optional=f.name != "id")
        elif part.get(f.name) is not None:
            values[f.name] = str(part[f.name])
        elif f.name == "type":
            raise InputError(f"run description: missing key '{key}.type'")
    return kind(**values)


def _run_from_dict(data: dict[str, Any]) -> Run:
    if not isinstance(data, dict):
        raise InputError("run description must be a JSON/TOML object")
    known = {f.name for f in fields(Run)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"run description: unknown key {unknown[0]!r}")
    primary_key = data["primary_key"]
    if not isinstance(primary_key, str) or not primary_key:
        raise InputError(f"run description: 'primary_key' must be a column name, got {primary_key!r}")
    return Run(
        org_id=_integer(data, "org_id"),  # type: ignore[arg-type]
        workspace_id=_integer(data, "workspace_id"),  # type: ignore[arg-type]
        sync_id=_integer(data, "sync_id"),  # type: ignore[arg-type]
        sync_run_id=_integer(data, "sync_run_id"),  # type: ignore[arg-type]
        primary_key=primary_key,
        behaviour=_enum(Behaviour, data, "behaviour"),
        source=_object(Connection, data, "source"),
        source_object=_object(SourceObject, data, "source_object"),
        destination=_object(Connection, data, "destination"),
        destination_object=_object(DestinationObject, data, "destination_object"),
        started_at=_timestamp(data, "started_at"),  # type: ignore[arg-type]
        model_id=_integer(data, "model_id", optional=True),
        model_name=data.get("model_name"),
        finished_at=_timestamp(data, "finished_at", optional=True),
        status=_enum(RunStatus, data, "status", RunStatus.SUCCEEDED),
        error=data.get("error"),
        full_model=_flag(data, "full_model"),
        extra=dict(data.get("extra") or {}),
    )
