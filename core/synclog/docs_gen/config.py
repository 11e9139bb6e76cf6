"""The `synclog.toml` reference, from the keys the configuration accepts."""

from __future__ import annotations

from synclog.config_keys import SECTIONS
from synclog.docs_gen.markdown import code, header, table


def page() -> str:
    """A section per table of `synclog.toml`, a row per key."""
    parts = [
        header("synclog.toml", "the keys `synclog.config` accepts (`synclog.config_keys`)"),
        "synclog reads `synclog.toml` from the working folder, `$SYNCLOG_CONFIG`, or `--config`. "
        "Any other key is refused in one line naming it (exit 2). Secrets are never values here: "
        "the keys ending in `_env` name the environment variable that holds one.\n",
    ]
    for section, keys in SECTIONS.items():
        title = "top level" if not section else f"[{section}]"
        parts.append(f"\n## {title}\n\n")
        parts.append(
            table(
                ["key", "value", "default", "meaning"],
                [[code(k.name), k.value, k.default, k.meaning] for k in keys],
            )
        )
    return "".join(parts)
