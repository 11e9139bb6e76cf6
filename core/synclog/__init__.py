"""synclog: row-level sync logs, written back into the warehouse of the people whose data was synced."""

from synclog.capabilities import Capabilities, Casefold
from synclog.config import Config
from synclog.errors import ConfigError, InputError, SynclogError, TargetError
from synclog.ids import stable_id
from synclog.model import (
    Behaviour,
    Connection,
    DestinationObject,
    InputStatus,
    Operation,
    RecordStatus,
    Run,
    RunStatus,
    SourceObject,
)
from synclog.plugins.hookspecs import hookimpl
from synclog.privacy import Mask, PayloadPolicy
from synclog.records import INPUT_ARROW_SCHEMA, INPUT_SCHEMA
from synclog.results import RunResult, WriteResult
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.writer import SyncLog

__all__ = [
    "INPUT_ARROW_SCHEMA",
    "INPUT_SCHEMA",
    "Behaviour",
    "Capabilities",
    "Casefold",
    "Config",
    "ConfigError",
    "Connection",
    "DestinationObject",
    "InputError",
    "InputStatus",
    "Mask",
    "Operation",
    "PayloadPolicy",
    "RecordStatus",
    "Run",
    "RunResult",
    "RunStatus",
    "SourceObject",
    "SyncLog",
    "SynclogError",
    "Target",
    "TargetError",
    "TargetSettings",
    "TargetType",
    "WriteResult",
    "hookimpl",
    "stable_id",
]
