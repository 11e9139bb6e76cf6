"""Where synclog lives in public, and which release this is.

pyproject.toml (`[project.urls]`) and mkdocs.yml (`repo_url`, `site_url`) name the same two
URLs; tests/test_notices.py checks that they agree.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

SOURCE_URL = "https://github.com/synclog/synclog"
"""The source repository; a release is its tag `v<version>`."""
DOCS_URL = "https://synclog.github.io/synclog/"
"""The documentation site (mkdocs.yml's `site_url`), built from docs/."""


def release() -> str:
    """The installed synclog's version."""
    try:
        return version("synclog")
    except PackageNotFoundError:  # pragma: no cover - synclog run from a source tree
        return "0+unknown"


def release_url() -> str:
    """The source of this release: the repository at its tag."""
    return f"{SOURCE_URL}/tree/v{release()}"
