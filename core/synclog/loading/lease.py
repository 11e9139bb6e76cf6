"""One loader per storage and target: the lease it holds while it runs.

    <storage>/loaders/<target>.json    who holds it: owner tag, pid, host, the target, heartbeat
    <storage>/loaders/<target>.lock    on a local or mounted disk: locked (flock) while held

A loader takes the lease before it loads anything and gives it back when it stops. On a disk
the lock file settles who holds it (the kernel drops a dead holder's lock); an object store has
no locks, so there the lease is the JSON file: a loader writes it, reads it back after
`SETTLE_S`, and goes on only if it still names it; a holder is taken as gone once its heartbeat
(`BEAT_S`) is `STALE_S` old. A holder that finds the file naming someone else stops loading.

Engines read the JSON file to know whether a loader serves them (`holder`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import IO

from synclog.errors import SynclogError
from synclog.storage.files import publish
from synclog.storage.location import Location
from synclog.storage.owners import gone, host, owner
from synclog.storage.queue import target_key
from synclog.urls import TargetURL

BEAT_S = 5.0
STALE_S = 30.0
SETTLE_S = 1.0


class LeaseHeld(SynclogError):
    """Another loader holds the lease."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, as its JSON file says."""

    owner: str
    pid: int
    host: str
    target: str
    """The target as shown to people (no password)."""
    started_at: str
    beat: str
    """When the holder last said it runs (ISO-8601, UTC)."""

    def alive(self, now: datetime | None = None) -> bool:
        """Whether the holder still runs: on this host, its process; elsewhere, its heartbeat."""
        if self.host == host():
            return not gone(self.owner)
        age = ((now or datetime.now(UTC)) - datetime.fromisoformat(self.beat)).total_seconds()
        return age < STALE_S

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, since {self.started_at[:19].replace('T', ' ')} UTC"


class Lease:
    """The lease of the loader of `target` (its `target_key`) on `storage`."""

    def __init__(self, storage: Location, target: str, shown: str) -> None:
        self.storage, self.location = storage, storage.child("loaders")
        self.target, self.shown = target, shown
        self._lock: IO[str] | None = None
        self._mine: Holder | None = None
        self._beaten = 0.0

    def holder(self) -> Holder | None:
        """The loader that holds the lease and still runs, if any."""
        fs = self.location.filesystem()
        try:
            with fs.open_input_stream(self.location.path(f"{self.target}.json")) as stream:
                held = Holder(**json.loads(stream.read().decode()))
        except (FileNotFoundError, ValueError, TypeError):
            return None
        return held if held.alive() else None

    def acquire(self) -> None:
        """Take the lease; LeaseHeld names the loader that holds it."""
        if self.location.local:
            os.makedirs(self.location.root, exist_ok=True)
            lock = open(self.location.path(f"{self.target}.lock"), "w")  # noqa: SIM115 - held while loading
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock.close()
                raise self._held() from None
            self._lock = lock
        else:
            current = self.holder()
            if current is not None and current.owner != owner():
                raise self._held(current)
        now = datetime.now(UTC).isoformat()
        self._mine = Holder(owner(), os.getpid(), host(), self.shown, now, now)
        self._write(self._mine)
        if not self.location.local:
            time.sleep(SETTLE_S)
            self.check()

    def check(self) -> None:
        """Raise LeaseHeld when the lease names another loader now; renew the heartbeat when due."""
        if self._mine is None:
            raise SynclogError("the lease is not held")
        if not self.location.local:
            current = self.holder()
            if current is None or current.owner != self._mine.owner:
                self._mine = None
                raise self._held(current)
        if time.monotonic() - self._beaten >= BEAT_S:
            self._mine = Holder(**{**asdict(self._mine), "beat": datetime.now(UTC).isoformat()})
            self._write(self._mine)

    def release(self) -> None:
        """Give the lease back (the JSON file goes, the lock is dropped)."""
        if self._mine is not None:
            with contextlib.suppress(FileNotFoundError):
                self.location.filesystem().delete_file(self.location.path(f"{self.target}.json"))
            self._mine = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _write(self, holder: Holder) -> None:
        data = json.dumps(asdict(holder)).encode()
        publish(
            self.location.filesystem(), self.location.path(f"{self.target}.json"), lambda out: out.write(data)
        )
        self._beaten = time.monotonic()

    def _held(self, current: Holder | None = None) -> LeaseHeld:
        current = current or self.holder()
        who = current.describe() if current else "another process"
        return LeaseHeld(f"a loader ({who}) already loads {self.shown} from {self.storage.uri()}")


def lease_for(storage: Location, url: TargetURL) -> Lease:
    """The lease of the loader of the target at `url` on `storage`."""
    return Lease(storage, target_key(url), shown(url))


def shown(url: TargetURL) -> str:
    """The target as people see it: its URL without password or query, its file's path whole."""
    url = url.resolved()
    return f"{url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"
