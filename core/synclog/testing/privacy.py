"""What privacy tests check with: a policy with a known key, its digests, and every value files hold."""

from __future__ import annotations

import hashlib
import hmac

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from synclog.privacy import Mask, PayloadPolicy
from synclog.storage.location import Location

MASK_KEY_ENV = "SYNCLOG_TEST_MASK_KEY"
MASK_KEY = "synclog-test-mask-key-0123456789"
EMAIL = r"[\w.+-]+@[\w-]+\.[\w.]+"
RAW = "@example.com"
"""What every raw email of the factories ends with: found nowhere once masked."""
POLICY = PayloadPolicy(
    log_fields=("email", "seats"),
    mask={"email": Mask.HMAC},
    mask_key_env=MASK_KEY_ENV,
    redact_messages=(EMAIL,),
    mask_identifier=Mask.HMAC,
)
"""Logs `email` (as a digest) and `seats` of the factories' payloads, drops `plan`."""


def digest(text: str) -> str:
    """HMAC-SHA256 of `text` under `MASK_KEY`, computed with Python's hmac as a reader would."""
    return hmac.new(MASK_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def files_text(location: Location) -> tuple[int, str]:
    """How many files `location` holds, and all their contents as text: each file's bytes, and
    for Parquet files every decoded value too (compressed pages hide their strings)."""
    fs = location.filesystem()
    selector = pafs.FileSelector(location.root, recursive=True, allow_not_found=True)
    found = [info.path for info in fs.get_file_info(selector) if info.is_file]
    texts = []
    for path in found:
        with fs.open_input_file(path) as handle:
            data = handle.read()
            texts.append(data.decode("utf-8", "replace"))
            if data[:4] == b"PAR1":
                texts.append(str(pq.read_table(handle).to_pylist()))
    return len(found), "\n".join(texts)
