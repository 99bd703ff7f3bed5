"""Run Alembic migrations from code (`tunelab migrate`, `tunelab up`, tests)."""

from pathlib import Path

from alembic import command
from alembic.config import Config

# migrations/ sits at the repository root, beside backend/.
MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)
