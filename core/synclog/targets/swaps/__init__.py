"""How a SQL target replaces the rows a load carries once its stage is filled: one strategy per
module, each a function from the target, the table, its relation, the filled stage and the scope
to the statements of the swap; `choice.swap_for` picks one from the target's capabilities.

| capabilities | strategy |
|---|---|
| `transactions` | `delete_insert`: [lock,] DELETE, INSERT, in one transaction |
| `transactions`, `replays_statements` | `insert_missing`: the same, the INSERT adding only missing keys |
| `merge` without `transactions` | `merge`: one MERGE |
| `partition_replace` without either | `partition_replace`: one statement per partition touched |
"""
