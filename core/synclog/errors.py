"""The errors synclog raises: each one says what is wrong in one line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

Outage = type[BaseException] | Callable[[BaseException], bool]
"""What makes an error an outage: an exception type, or a test of the exception (its driver's
error name or code) for a driver that raises one type for everything."""


class SynclogError(Exception):
    """Base class of every error synclog raises on purpose."""


class InputError(SynclogError):
    """The run description or the record results break the input contract; nothing was written."""


class ConfigError(SynclogError):
    """A target URL, `synclog.toml` or a command-line option is unusable."""


class TargetError(SynclogError):
    """The warehouse (or the storage) is unreachable or failed: an outage, which writes survive."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (a driver's detail lines and context stay out)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_outage(exc: BaseException, kinds: Iterable[Outage]) -> bool:
    """Whether `exc` is of one of the exception types in `kinds` or passes one of its tests."""
    return any(isinstance(exc, kind) if isinstance(kind, type) else kind(exc) for kind in kinds)


@contextmanager
def outages(kinds: Iterable[Outage], where: str) -> Iterator[None]:
    """Turn a driver's connection and server failures (`kinds`: exception types, or tests of an
    exception such as `lambda e: getattr(e, "sqlite_errorname", "") == "SQLITE_BUSY"`) into
    one-line TargetErrors.

    Only these are outages that a write survives (its batches wait for `flush`); any other
    error of the driver, such as SQL it rejects, is a bug of ours and passes through as it is.
    """
    kinds = tuple(kinds)
    try:
        yield
    except BaseException as exc:
        if _is_outage(exc, kinds):
            raise TargetError(f"{where}: {first_line(exc)}") from None
        raise
