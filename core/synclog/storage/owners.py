"""Which process wrote a scratch file or folder, and whether that process is gone.

Writers name what they leave behind only while they run (load staging, read-back exports, the
run store's write folders, files being published; staging tables with `compact_owner`) with an
owner tag: the host, the process id and, on Linux, the process's start time (so a recycled pid
is not taken for the writer). A writer killed with SIGKILL cleans nothing up; the next writer
finds its leftovers by their tag and removes those whose owner is gone:

- on this host, the owner is gone when no process with that pid and start time runs;
- from another host, liveness cannot be asked: a tag is taken as gone once the file or folder
  it names is older than `FOREIGN_AFTER` (no load, read-back or write lasts that long).
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from datetime import UTC, datetime, timedelta
from functools import cache

SEPARATOR = "_"
MARK = "@"
"""Separates a name from its owner tag."""
FOREIGN_AFTER = timedelta(days=1)
"""How old another host's leftovers must be before they are removed."""
_TAG = re.compile(r"(?P<host>[A-Za-z0-9-]+)_(?P<pid>\d+)_(?P<start>\d+)")


@cache
def host() -> str:
    """This machine's name, as a tag spells it (letters, digits and dashes only)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


@cache
def host_digest() -> str:
    """This machine's name in 8 hex digits: the host of a compact tag (short enough for identifiers)."""
    return hashlib.sha256(host().encode()).hexdigest()[:8]


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux), 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return 0


def owner() -> str:
    """The tag of this process: `host_pid_start` (called on the driver or in a Spark task)."""
    pid = os.getpid()
    return f"{host()}{SEPARATOR}{pid}{SEPARATOR}{_start_time(pid)}"


def compact_owner() -> str:
    """The tag of this process with the host as its digest: `digest_pid_start` (for identifiers)."""
    pid = os.getpid()
    return f"{host_digest()}{SEPARATOR}{pid}{SEPARATOR}{_start_time(pid)}"


def tagged(name: str) -> str:
    """`name` with this process's tag: `name@host_pid_start`."""
    return f"{name}{MARK}{owner()}"


def tag_of(name: str) -> str | None:
    """The owner tag of a file or folder name made by `tagged` (a `.tmp` suffix aside), if any."""
    _, mark, tag = name.removesuffix(".tmp").rpartition(MARK)
    return tag if mark and _TAG.fullmatch(tag) else None


def gone(tag: str, modified: datetime | None = None, now: datetime | None = None) -> bool:
    """Whether the process `tag` (or a compact tag) names has ended (see the module's doc for
    another host's tags)."""
    found = _TAG.fullmatch(tag)
    if found is None:
        return False
    if found["host"] not in (host(), host_digest()):
        if modified is None:
            return False
        return (now or datetime.now(UTC)) - modified > FOREIGN_AFTER
    pid, start = int(found["pid"]), int(found["start"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it runs, as another user
    return start != 0 and _start_time(pid) not in (0, start)
