"""The errors synclog raises: each one says what is wrong in one line."""


class SynclogError(Exception):
    """Base class of every error synclog raises on purpose."""


class InputError(SynclogError):
    """The run description or the record results break the input contract; nothing was written."""


class ConfigError(SynclogError):
    """A target URL, `synclog.toml` or a command-line option is unusable."""


class TargetError(SynclogError):
    """The warehouse refused or failed an operation."""
