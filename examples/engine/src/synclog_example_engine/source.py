"""The sync's source: the contacts a model holds now and the ones that left it since the last run."""

from __future__ import annotations

from dataclasses import dataclass

PLANS = ("free", "pro", "enterprise")


@dataclass(frozen=True)
class Changes:
    """What one run sends: contacts to upsert (model rows) and emails to delete."""

    upserts: list[dict[str, str]]
    deletes: list[str]


def changes(upserts: int = 160, deletes: int = 40) -> Changes:
    """A deterministic source with the flaws a real one has: malformed emails and unknown plans."""
    rows = [
        {
            "email": f"user{i}(at)example.com" if i % 9 == 4 else f"user{i}@example.com",
            "name": f"User {i}",
            "plan": "platinum" if i % 25 == 7 else PLANS[i % len(PLANS)],
        }
        for i in range(upserts)
    ]
    return Changes(rows, [f"former{i}@example.com" for i in range(deletes)])


def already_in_destination(source: Changes) -> set[str]:
    """The contacts the destination holds before the run: three in four of those to delete."""
    return {email for i, email in enumerate(source.deletes) if i % 4}
