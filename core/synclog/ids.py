"""Engines' string ids (a sync's name, a run's UUID, an object's name) as the integer ids of the log.

The log tables, and the seeds' queries over them, key syncs, runs and objects by 64-bit integers.
`stable_id` maps a string to one: the first 8 bytes of the SHA-256 of its UTF-8 text, big-endian,
with the top bit cleared, so 0 <= id < 2**63 (a positive BIGINT in every warehouse).

The mapping is part of synclog's contract: it is the same on every machine and in every version,
so a name logged today finds its rows next year. Collisions are not detected: two different names
share an id with probability about n**2 / 2**64 among n names (about 5e-8 for a million names);
an engine that must rule them out keeps integer ids of its own.
"""

from __future__ import annotations

import hashlib

_BYTES = 8


def stable_id(name: str) -> int:
    """The integer id of `name`, in [0, 2**63): the same everywhere and in every version."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()[:_BYTES]
    return int.from_bytes(digest, "big") >> 1


def id_of(text: str) -> int:
    """A command-line sync or run: an integer id as it is, a name mapped by `stable_id`."""
    stripped = text.strip()
    return int(stripped) if stripped.isdecimal() else stable_id(stripped)
