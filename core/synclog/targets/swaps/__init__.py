"""How a SQL target replaces the rows a load carries once its stage is filled: one strategy per
module, each a function from the target, the table, its relation, the filled stage and the keys
it replaces (constants: `synclog.targets.keys`) to the statements of the swap. The target's
capabilities name one (`Capabilities.swap`), else the first that applies:

- `delete-insert` (`transactions`): [lock,] DELETE of the keys, INSERT from the stage, in one
  transaction;
- `insert-missing` (`transactions`; the default with `replays_statements`): the same, the INSERT
  adding rows only while no row of the keys is left;
- `merge` (`merge`; the default without `transactions`): one MERGE;
- `partition-replace` (`partition_replace`; the default without either): the steps of each
  partition touched;
- `own`: the target's own statements (`choice.OwnSwap`).
"""
