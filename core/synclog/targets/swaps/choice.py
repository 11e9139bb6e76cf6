"""The swap strategy a target's capabilities pick (`synclog.targets.swaps`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from synclog.capabilities import Capabilities
from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps import delete_insert, insert_missing, merge, partition_replace
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec

Swap = Callable[[SwapHost, TableSpec, Relation, Relation, Mapping[str, Any] | None], list[Statement]]
"""A strategy: the statements that replace what a filled stage (or a scope) replaces."""

NO_SWAP = (
    "declares no transactions, no merge and no partition_replace, one of which picks how it replaces rows"
)


def swap_for(capabilities: Capabilities) -> Swap:
    """Delete-and-insert with transactions (inserting only missing keys where the client replays
    statements), else one MERGE, else partition replace; a ConfigError where none applies."""
    if capabilities.transactions:
        return insert_missing.statements if capabilities.replays_statements else delete_insert.statements
    if capabilities.merge:
        return merge.statements
    if capabilities.partition_replace:
        return partition_replace.statements
    raise ConfigError(f"a target that {NO_SWAP}")


def has_swap(capabilities: Capabilities) -> bool:
    """Whether `capabilities` pick a swap strategy."""
    return capabilities.transactions or capabilities.merge or capabilities.partition_replace


def replaces_partitions(capabilities: Capabilities) -> bool:
    """Whether the strategy is partition replace: rows change only by rewriting partitions (swaps
    and retention alike)."""
    return has_swap(capabilities) and swap_for(capabilities) is partition_replace.statements
