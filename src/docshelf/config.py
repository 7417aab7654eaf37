"""Settings from the environment (SPEC §9 "Configuration")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from docshelf.errors import InvalidInput

EMBEDDERS = ("local", "none")


def default_home() -> Path:
    env = os.environ.get("DOCSHELF_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("docshelf", appauthor=False))


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    embedder: str  # "local", "none", or "auto" (local when installed, else none)
    max_file_bytes: int = 25 * 1024 * 1024
    embed_batch_size: int = 16  # small batches were faster on a 2-core CPU (BENCHMARKS.md)

    @classmethod
    def from_env(cls, home: Path | None = None) -> Settings:
        home = (home or default_home()).expanduser().resolve()
        db = os.environ.get("DOCSHELF_DATABASE_URL") or f"sqlite:///{home / 'docshelf.db'}"
        embedder = os.environ.get("DOCSHELF_EMBEDDER", "auto").strip().lower() or "auto"
        if embedder not in (*EMBEDDERS, "auto"):
            raise InvalidInput(
                f"DOCSHELF_EMBEDDER={embedder!r} is not known; use one of: local, none"
            )
        max_mb = os.environ.get("DOCSHELF_MAX_FILE_MB")
        try:
            max_bytes = int(float(max_mb) * 1024 * 1024) if max_mb else cls.max_file_bytes
        except ValueError:
            raise InvalidInput(f"DOCSHELF_MAX_FILE_MB={max_mb!r} is not a number") from None
        return cls(home=home, database_url=db, embedder=embedder, max_file_bytes=max_bytes)
