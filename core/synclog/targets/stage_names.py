"""Staging relation names that say which writer process made them.

A killed writer cleans nothing up: its staging table stays in the warehouse. Every stage is
named `_synclog_stage_<8 hex>_<owner>`, the owner being the writer's compact owner tag
(`synclog.storage.owners.compact_owner`: a digest of the host, the pid, the start time), so
that the next writer can tell a dead writer's stage from a live one's (`orphaned`) and drop it
(`SqlTarget.sweep_stages`). A stage of this process is left too where the connection failed as
its load released it (an outage at its DROP): once released, this process's stage is a leftover
the next sweep drops, while an open one (a load in progress, in any thread) stays. Names fit
PostgreSQL's 63 characters, a `_parts` suffix included.
"""

from __future__ import annotations

import re
import threading
import uuid
from datetime import datetime

from synclog.storage.owners import compact_owner, gone

STAGE_PREFIX = "_synclog_stage_"
"""Staging relations are named so; nothing else of the warehouse is."""
STAGE_NAME = rf"{STAGE_PREFIX}[0-9a-f]{{8}}_[0-9a-f]{{8}}_[0-9]+_[0-9]+"
"""The pattern of a stage name (unanchored; the same in Python and POSIX regular expressions)."""
_NAME = re.compile(STAGE_NAME)


_open: set[str] = set()
"""The stages this process named and has not released: its loads in progress."""
_open_lock = threading.Lock()


def new_stage_name() -> str:
    """A fresh stage name, owned by this process and open until `released`."""
    name = f"{STAGE_PREFIX}{uuid.uuid4().hex[:8]}_{compact_owner()}"
    with _open_lock:
        _open.add(name)
    return name


def released(name: str) -> None:
    """The load of stage `name` is over, its stage dropped or not: a sweep may drop what is left."""
    with _open_lock:
        _open.discard(name.lower())


def stage_owner(name: str) -> str | None:
    """The owner tag in a stage name (in any letter case), or None for any other name."""
    folded = name.lower()
    if not _NAME.fullmatch(folded):
        return None
    return folded.removeprefix(STAGE_PREFIX).split("_", 1)[1]


def orphaned(name: str, created: datetime | None = None) -> bool:
    """Whether `name` is a stage left behind: its writer is gone (`created`: when the warehouse
    made it, where it says; another host's stage counts as gone only once it is that old), or it is
    this process's and `released`."""
    owner = stage_owner(name)
    if owner is None:
        return False
    if owner == compact_owner():
        with _open_lock:
            return name.lower() not in _open
    return gone(owner, created)
