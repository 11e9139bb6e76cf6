"""The errors synclog raises: each one says what is wrong in one line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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


@contextmanager
def outages(kinds: tuple[type[BaseException], ...], where: str) -> Iterator[None]:
    """Turn a driver's connection and server failures (`kinds`) into one-line TargetErrors.

    Only these are outages that a write survives (its batches wait for `flush`); any other
    error of the driver, such as SQL it rejects, is a bug of ours and passes through as it is.
    """
    try:
        yield
    except kinds as exc:
        raise TargetError(f"{where}: {first_line(exc)}") from None
