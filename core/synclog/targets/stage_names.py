"""Staging relation names that say which writer process made them.

A killed writer cleans nothing up: its staging table stays in the warehouse. Every stage is
named `_synclog_stage_<8 hex>_<owner>`, the owner being the writer's compact owner tag
(`synclog.storage.owners.compact_owner`: a digest of the host, the pid, the start time), so
that the next writer can tell a dead writer's stage from a live one's (`orphaned`) and drop it
(`SqlTarget.sweep_stages`). Names fit PostgreSQL's 63 characters, a `_parts` suffix included.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime

from synclog.storage.owners import compact_owner, gone

STAGE_PREFIX = "_synclog_stage_"
"""Staging relations are named so; nothing else of the warehouse is."""
STAGE_NAME = rf"{STAGE_PREFIX}[0-9a-f]{{8}}_[0-9a-f]{{8}}_[0-9]+_[0-9]+"
"""The pattern of a stage name (unanchored; the same in Python and POSIX regular expressions)."""
_NAME = re.compile(STAGE_NAME)


def new_stage_name() -> str:
    """A fresh stage name, owned by this process."""
    return f"{STAGE_PREFIX}{uuid.uuid4().hex[:8]}_{compact_owner()}"


def stage_owner(name: str) -> str | None:
    """The owner tag in a stage name (in any letter case), or None for any other name."""
    folded = name.lower()
    if not _NAME.fullmatch(folded):
        return None
    return folded.removeprefix(STAGE_PREFIX).split("_", 1)[1]


def orphaned(name: str, created: datetime | None = None) -> bool:
    """Whether `name` is a stage whose writer is gone (`created`: when the warehouse made it,
    where it says; another host's stage counts as gone only once it is that old)."""
    owner = stage_owner(name)
    return owner is not None and gone(owner, created)
