"""A small sync engine that sends contacts to an HTTP API in batches and logs each batch through synclog."""

from synclog_example_engine.destination import ContactsAPI
from synclog_example_engine.engine import SyncReport, contacts_run, sync
from synclog_example_engine.source import Changes, already_in_destination, changes

__all__ = [
    "Changes",
    "ContactsAPI",
    "SyncReport",
    "already_in_destination",
    "changes",
    "contacts_run",
    "sync",
]
