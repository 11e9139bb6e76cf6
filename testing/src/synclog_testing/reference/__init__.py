"""The reference model of synclog's log tables (see `synclog_testing.reference.log`)."""

from synclog_testing.reference.log import Layouts, ReferenceLog, Refused
from synclog_testing.reference.records import Record

__all__ = ["Layouts", "Record", "ReferenceLog", "Refused"]
