"""A target that does not answer yet, and a way to bring it up: the conformance suite's outages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outage:
    """A target that does not answer yet: its URL, and a context in which it answers."""

    url: str
    up: Callable[[], AbstractContextManager[None]]
    goes_down_again: bool = False
    """Whether leaving `up` cuts the connections made meanwhile (a forwarder), so the target can
    also fail in the middle of a run."""


def file_outage(folder: Path, scheme: str, filename: str) -> Outage:
    """A file database whose folder cannot be made while a file stands where it goes; `up`
    removes that file."""
    blocker = folder / "warehouse"
    blocker.write_text("")

    @contextmanager
    def up() -> Iterator[None]:
        blocker.unlink()
        yield

    return Outage(f"{scheme}:///{blocker / filename}", up)
