"""Schema migrations, run automatically at start (``openbot db upgrade`` runs them by hand)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from openbot.store.db import sync_url

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "heads") -> None:
    """Every head: features may add their tables on branches of their own (merged later)."""
    command.upgrade(alembic_config(url), revision)
