"""The layouts synclog knows, by name."""

from __future__ import annotations

from synclog.errors import ConfigError
from synclog.layouts.base import Layout
from synclog.layouts.census import CensusLayout
from synclog.layouts.hightouch import HightouchLayout
from synclog.layouts.lake import LakeLayout

LAYOUTS: dict[str, Layout] = {
    layout.name: layout for layout in (CensusLayout(), HightouchLayout(), LakeLayout())
}


def layout(name: str) -> Layout:
    """The layout called `name`."""
    try:
        return LAYOUTS[name]
    except KeyError:
        known = ", ".join(sorted(LAYOUTS))
        raise ConfigError(f"unknown layout {name!r} (known: {known})") from None
