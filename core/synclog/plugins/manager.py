"""Load plugins from the `synclog` entry-point group and collect the targets they register."""

from __future__ import annotations

from functools import cache

import pluggy

from synclog.errors import ConfigError
from synclog.plugins import default_targets, hookspecs
from synclog.privacy import HookCall
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.targets.contract import check_target_class
from synclog.urls import TargetURL


class TargetRegistry:
    """Every target type the installed plugins register, by name and URL scheme."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self.manager = manager
        self._types: dict[str, TargetType] = {}
        manager.hook.synclog_register_targets(register=self.register)

    def register(self, target_type: TargetType) -> None:
        """Add a target type; a second plugin claiming the same name or scheme is an error."""
        if target_type.name in self._types:
            raise ConfigError(f"two plugins register a target named {target_type.name!r}")
        for scheme in target_type.schemes:
            owner = self._by_scheme().get(scheme)
            if owner is not None:
                raise ConfigError(f"plugins {owner.name!r} and {target_type.name!r} both claim {scheme}://")
        opener = target_type.opener
        if isinstance(opener, type) and issubclass(opener, Target):
            check_target_class(target_type.name, opener, target_type.capabilities)
        self._types[target_type.name] = target_type

    def types(self) -> list[TargetType]:
        """Registered target types, sorted by name."""
        return sorted(self._types.values(), key=lambda t: t.name)

    def for_url(self, url: TargetURL) -> TargetType:
        """The target type that handles `url`'s scheme."""
        found = self._by_scheme().get(url.scheme)
        if found is None:
            known = ", ".join(sorted(self._by_scheme())) or "none"
            raise ConfigError(
                f"no installed plugin handles {url.scheme}:// (installed: {known}); "
                f"pip install synclog-{url.scheme.split('+')[0]}?"
            )
        return found

    def open(self, url: TargetURL, settings: TargetSettings | None = None) -> Target:
        """Open the target `url` names."""
        return self.for_url(url).open(url, settings)

    def _by_scheme(self) -> dict[str, TargetType]:
        return {scheme: t for t in self._types.values() for scheme in t.schemes}


def plugin_manager() -> pluggy.PluginManager:
    """A manager with synclog's hooks and every installed plugin loaded and checked."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(default_targets, "synclog.default_targets")
    manager.load_setuptools_entrypoints(hookspecs.PROJECT)
    for plugin, dist in manager.list_plugin_distinfo():
        check_api_version(plugin, f"{dist.project_name} {dist.version}")
    manager.check_pending()
    return manager


def check_api_version(plugin: object, where: str) -> None:
    """Refuse a plugin module built for another plugin API, or that does not say which."""
    name = getattr(plugin, "__name__", repr(plugin))
    declared = getattr(plugin, hookspecs.API_ATTRIBUTE, None)
    wanted = hookspecs.PLUGIN_API_VERSION
    if declared is None:
        raise ConfigError(
            f"plugin {name} ({where}) does not declare the plugin API it is built for "
            f"({hookspecs.API_ATTRIBUTE} = {wanted}); it may predate this synclog"
        )
    if declared != wanted:
        raise ConfigError(
            f"plugin {name} ({where}) is built for synclog plugin API {declared}, "
            f"this synclog has {wanted}: install a release of it built for {wanted}"
        )


@cache
def registry() -> TargetRegistry:
    """The process-wide registry of installed targets (loaded once)."""
    return TargetRegistry(plugin_manager())


def payload_hooks() -> tuple[HookCall, ...]:
    """The `synclog_transform_payload` implementations, in the order pluggy calls them."""
    impls = registry().manager.hook.synclog_transform_payload.get_hookimpls()
    return tuple((impl.function, tuple(impl.argnames)) for impl in reversed(impls))
