"""The swap strategy a target's capabilities name (`Capabilities.swap_strategy`), as statements."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from synclog.capabilities import Capabilities, SwapStrategy
from synclog.errors import ConfigError
from synclog.naming import Relation
from synclog.targets.keys import Keys
from synclog.targets.sql_statements import Statement
from synclog.targets.swaps import delete_insert, insert_missing, merge, partition_replace
from synclog.targets.swaps.host import SwapHost
from synclog.targets.tables import TableSpec

Swap = Callable[[SwapHost, TableSpec, Relation, Relation, Keys], list[Statement]]
"""A strategy: the statements that replace the rows of the keys by a filled stage's."""

STRATEGIES: dict[SwapStrategy, Swap] = {
    SwapStrategy.DELETE_INSERT: delete_insert.statements,
    SwapStrategy.INSERT_MISSING: insert_missing.statements,
    SwapStrategy.MERGE: merge.statements,
    SwapStrategy.PARTITION_REPLACE: partition_replace.statements,
}
"""The core's strategies; `SwapStrategy.OWN` is the target's (`OwnSwap`)."""


@runtime_checkable
class OwnSwap(Protocol):
    """`swap = own`: the target writes its swaps' statements itself."""

    @abstractmethod
    def swap_statements(
        self, table: TableSpec, relation: Relation, stage: Relation, keys: Keys
    ) -> list[Statement]:
        """The statements that leave `relation` without the rows of `keys` and with the rows of
        the filled `stage`, built once the stage is filled; run by `run_swap`."""


def swap_statements(
    target: SwapHost,
    capabilities: Capabilities,
    table: TableSpec,
    relation: Relation,
    stage: Relation,
    keys: Keys,
) -> list[Statement]:
    """The statements of the strategy `capabilities` name, for `target`."""
    strategy = capabilities.swap_strategy
    if strategy is SwapStrategy.OWN:
        if not isinstance(target, OwnSwap):
            raise ConfigError(f"{type(target).__name__} is no OwnSwap, which its capabilities need")
        return target.swap_statements(table, relation, stage, keys)
    if strategy is None:
        raise ConfigError(f"a target that {capabilities.swap_refusal()}")
    return STRATEGIES[strategy](target, table, relation, stage, keys)


def replaces_partitions(capabilities: Capabilities) -> bool:
    """Whether the strategy is partition replace: rows change only by rewriting partitions (swaps
    and retention alike)."""
    return capabilities.swap_strategy is SwapStrategy.PARTITION_REPLACE
