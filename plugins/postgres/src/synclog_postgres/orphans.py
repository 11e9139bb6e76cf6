"""Staging tables a killed driver left behind, found and dropped by the next run.

The lock protocol: a load takes a session-level advisory lock keyed on its stage's name
(`lock_sql`, `stage_key`) before it creates `_synclog_stage_<16 hex>` and its `_parts`
ledger, and releases it after dropping them. The lock lives exactly as long as the loading
session, so a stage whose lock can be taken belongs to a session that is gone: `sweep` (the
target's `sweep_stages`, run by every `ensure()`) takes each such lock with
`pg_try_advisory_lock`, drops the stage and its ledger, and unlocks. A live load's stage is
locked by its session and left alone.

The keys use the two-integer form (class `LOCK_CLASS`), a key space apart from the one-bigint
locks that serialise moves into a table. Session locks are re-entrant, so a sweep must not
run on the session of a load in progress (a target's connection loads one thing at a time).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import psycopg

from synclog.plugin_api import STAGE_NAME, STAGE_PREFIX, Relation

LEDGER = "_parts"
STAGE_PATTERN = re.compile(rf"^({STAGE_NAME}|{STAGE_PREFIX}[0-9a-f]{{16}})({LEDGER})?$")
"""A stage table or its ledger, as the core and `PostgresTarget.create_stage` name them (or as
releases before stage names carried their owner did); nothing else."""
LOCK_CLASS = 0x5359_4E43
"""The first key of every stage lock ("SYNC")."""
DROP_LOCK_TIMEOUT = "1s"
"""How long a sweep's DROP waits for a session that still has the stage open."""


def stage_key(stage: Relation) -> list[Any]:
    """The advisory lock key parameters of `stage`: the class and its `schema.name` text."""
    return [LOCK_CLASS, ".".join(stage.parts[-2:])]


def lock_sql(function: str) -> str:
    """`SELECT <function>(class, hashtext(name))` for pg_advisory_lock, _unlock or _try_lock."""
    return f"SELECT {function}(%s, hashtext(%s))"


def find(connection: psycopg.Connection[Any], schemas: Iterable[str]) -> list[Relation]:
    """The stages (named for their main table) that have a table in `schemas`, live or not."""
    rows = connection.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = ANY(%s) AND c.relkind = 'r' AND c.relname ~ %s",
        [sorted(set(schemas)), STAGE_PATTERN.pattern],
    ).fetchall()
    stages = {Relation(schema=schema, name=name.removesuffix(LEDGER)) for schema, name in rows}
    return sorted(stages, key=str)


def sweep(connection: psycopg.Connection[Any], schemas: Iterable[str]) -> list[Relation]:
    """Drop the stages in `schemas` whose loading session is gone; return those dropped.

    A stage some lingering session (a killed driver's executor, say) still has open is
    left for a later sweep: the DROP waits at most `DROP_LOCK_TIMEOUT` for it.
    """
    dropped = []
    for stage in find(connection, schemas):
        if not try_lock(connection, stage):
            continue
        ledger = stage.with_name(stage.name + LEDGER)
        try:
            with connection.transaction():
                connection.execute("SELECT set_config('lock_timeout', %s, true)", [DROP_LOCK_TIMEOUT])
                connection.execute(f"DROP TABLE IF EXISTS {stage.render()}, {ledger.render()}")
        except psycopg.errors.LockNotAvailable:
            continue  # a later sweep drops it
        finally:
            connection.execute(lock_sql("pg_advisory_unlock"), stage_key(stage))
        dropped.append(stage)
    return dropped


def try_lock(connection: psycopg.Connection[Any], stage: Relation) -> bool:
    """Take `stage`'s lock unless another session holds it; say whether it was taken."""
    return connection.execute(lock_sql("pg_try_advisory_lock"), stage_key(stage)).fetchone() == (True,)
