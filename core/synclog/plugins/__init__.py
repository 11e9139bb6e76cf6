"""The plugin system: hook specifications and the manager that loads `synclog` entry points."""

from synclog.plugins.hookspecs import hookimpl
from synclog.plugins.manager import TargetRegistry, registry

__all__ = ["TargetRegistry", "hookimpl", "registry"]
