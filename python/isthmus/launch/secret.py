# isthmus/launch/secret.py: the job id and the per-job secret gateways authenticate with.
# The secret lives in a 0600 file inside a private 0700 temp dir removed at exit; it is never
# printed, logged, or put into an exception message or a repr.
from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

from ..errors import IsthmusError

JOB_ID_BYTES = 16
SECRET_BYTES = 32
MIN_SECRET_HEX = 32  # a user-supplied secret must carry at least 16 bytes
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")


def new_job_id() -> str:
    """32 hex chars (16 random bytes)."""
    return secrets.token_hex(JOB_ID_BYTES)


class Secret:
    """A job secret as lowercase hex text. Its repr/str never show the value."""

    __slots__ = ("_hex",)

    def __init__(self, hex_text: str):
        self._hex = hex_text.lower()

    @classmethod
    def generate(cls) -> "Secret":
        return cls(secrets.token_hex(SECRET_BYTES))

    @classmethod
    def parse(cls, text: str, what: str) -> "Secret":
        """Validate user-supplied secret text; `what` names its origin for messages (the
        message never contains the text itself)."""
        value = text.strip()
        if not value:
            raise IsthmusError(f"{what}: the secret is empty")
        if not _HEX_RE.match(value) or len(value) % 2:
            raise IsthmusError(f"{what}: the secret must be hex digits (an even number of them)")
        if len(value) < MIN_SECRET_HEX:
            raise IsthmusError(
                f"{what}: the secret is too short ({len(value)} hex digits, need at least {MIN_SECRET_HEX})"
            )
        return cls(value)

    def reveal(self) -> str:
        """The hex text. Only for writing the secret file / feeding a remote launcher."""
        return self._hex

    def __repr__(self) -> str:
        return "Secret(<hidden>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(self._hex, other._hex)

    def __hash__(self) -> int:
        return hash(("Secret", len(self._hex)))


class SecretFile:
    """Writes a secret to <private 0700 tmp dir>/secret (mode 0600) as hex text plus a
    newline. Removed by close(), on leaving a `with` block, or at interpreter exit."""

    def __init__(self, secret: Secret):
        self._dir = Path(tempfile.mkdtemp(prefix="isthmus-"))
        os.chmod(self._dir, 0o700)
        self.path = self._dir / "secret"
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, (secret.reveal() + "\n").encode("ascii"))
        finally:
            os.close(fd)
        atexit.register(self.close)

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
        try:
            atexit.unregister(self.close)
        except Exception:  # pragma: no cover - interpreter shutting down
            pass

    def __enter__(self) -> "SecretFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SecretFile({str(self.path)!r})"
