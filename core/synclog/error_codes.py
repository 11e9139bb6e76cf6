"""The destination's error code of a record: given by the engine, or read from its message.

"Most common reason" counts codes, not messages: an API that echoes the value it refused
(`INVALID_EMAIL: a@b.c`) makes every message unique. An engine that knows the code passes it
in the optional `error_code` column; otherwise the code is what a pattern's first group takes
from the start of the message of a record that did not succeed. The default pattern takes the
words before a colon, at most six, of letters, digits and `_.-` (`INVALID_EMAIL`, `HTTP 503`,
`429 Too Many Requests`; a value the API echoes, `a@b.c: …`, is no code); a sync configures its own with
`error_code_pattern` in `synclog.toml` (a Java regular expression, as Spark runs it).
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F

from synclog.errors import ConfigError
from synclog.model import InputStatus

DEFAULT_PATTERN = r"^\s*([A-Za-z0-9_.\-]+(?: [A-Za-z0-9_.\-]+){0,5})\s*:"


def checked_pattern(pattern: object, where: str) -> str:
    """`pattern` if it is a regular expression with a group to take the code from."""
    if not isinstance(pattern, str):
        raise ConfigError(f"{where}: error_code_pattern must be a string, got {pattern!r}")
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise ConfigError(f"{where}: error_code_pattern is not a regular expression: {exc}") from None
    if groups < 1:
        raise ConfigError(f"{where}: error_code_pattern needs a group, e.g. '^([A-Z_]+):'")
    return pattern


def error_code(pattern: str) -> Column:
    """The record's error code: the engine's `error_code` when given (NULL or blank: not given),
    else the pattern's first group of the message of a record that did not succeed (NULL when it
    does not match)."""
    given = F.nullif(F.trim(F.col("error_code")), F.lit(""))
    found = F.nullif(F.regexp_extract(F.col("status_message"), pattern, 1), F.lit(""))
    derived = F.when(F.col("status") != InputStatus.SUCCEEDED.value, found)
    return F.coalesce(given, derived)
