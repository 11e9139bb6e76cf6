"""synclog: row-level sync logs, written back into the warehouse of the people whose data was synced.

The names below are imported when first used (PEP 562), so that `import synclog` and a sync
engine's `BackgroundLog.open` import no Spark, Arrow or warehouse driver in the engine's thread.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from synclog.background import BackgroundLog as BackgroundLog
    from synclog.batches import Write as Write
    from synclog.capabilities import Capabilities as Capabilities
    from synclog.capabilities import Casefold as Casefold
    from synclog.config import Config as Config
    from synclog.errors import ConfigError as ConfigError
    from synclog.errors import InputError as InputError
    from synclog.errors import SynclogError as SynclogError
    from synclog.errors import TargetError as TargetError
    from synclog.ids import stable_id as stable_id
    from synclog.model import Behaviour as Behaviour
    from synclog.model import Connection as Connection
    from synclog.model import DestinationObject as DestinationObject
    from synclog.model import InputStatus as InputStatus
    from synclog.model import Operation as Operation
    from synclog.model import RecordStatus as RecordStatus
    from synclog.model import Run as Run
    from synclog.model import RunStatus as RunStatus
    from synclog.model import SourceObject as SourceObject
    from synclog.plugins.hookspecs import hookimpl as hookimpl
    from synclog.privacy import Mask as Mask
    from synclog.privacy import PayloadPolicy as PayloadPolicy
    from synclog.records import INPUT_ARROW_SCHEMA as INPUT_ARROW_SCHEMA
    from synclog.records import INPUT_SCHEMA as INPUT_SCHEMA
    from synclog.results import RunResult as RunResult
    from synclog.results import WriteResult as WriteResult
    from synclog.targets.base import Target as Target
    from synclog.targets.base import TargetSettings as TargetSettings
    from synclog.targets.base import TargetType as TargetType
    from synclog.writer import SyncLog as SyncLog

_WHERE = {
    "BackgroundLog": "synclog.background",
    "Behaviour": "synclog.model",
    "Capabilities": "synclog.capabilities",
    "Casefold": "synclog.capabilities",
    "Config": "synclog.config",
    "ConfigError": "synclog.errors",
    "Connection": "synclog.model",
    "DestinationObject": "synclog.model",
    "INPUT_ARROW_SCHEMA": "synclog.records",
    "INPUT_SCHEMA": "synclog.records",
    "InputError": "synclog.errors",
    "InputStatus": "synclog.model",
    "Mask": "synclog.privacy",
    "Operation": "synclog.model",
    "PayloadPolicy": "synclog.privacy",
    "RecordStatus": "synclog.model",
    "Run": "synclog.model",
    "RunResult": "synclog.results",
    "RunStatus": "synclog.model",
    "SourceObject": "synclog.model",
    "SyncLog": "synclog.writer",
    "SynclogError": "synclog.errors",
    "Target": "synclog.targets.base",
    "TargetError": "synclog.errors",
    "TargetSettings": "synclog.targets.base",
    "TargetType": "synclog.targets.base",
    "Write": "synclog.batches",
    "WriteResult": "synclog.results",
    "hookimpl": "synclog.plugins.hookspecs",
    "stable_id": "synclog.ids",
}
"""Each public name and the module that defines it."""

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'synclog' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
