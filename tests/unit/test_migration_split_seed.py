"""Migration 0005 gives every existing dataset a fixed eval-split seed: the one a new upload of its bytes gets."""

import hashlib

import sqlalchemy as sa

from tunelab.db.migrate import downgrade, upgrade
from tunelab.services.catalog.datasets import split_seed_for


def test_existing_datasets_get_the_split_seed_of_their_content(migration_db_url):
    downgrade(migration_db_url)
    upgrade(migration_db_url, "0004")
    hashes = [hashlib.sha256(text).hexdigest() for text in (b'{"text": "a"}\n', b'{"text": "b"}\n')]
    engine = sa.create_engine(migration_db_url)
    try:
        with engine.begin() as conn:
            project_id = conn.execute(sa.text("SELECT id FROM project")).scalar_one()
            for number, content_hash in enumerate(hashes):
                conn.execute(
                    sa.text("INSERT INTO dataset (project_id, name, format, path, content_hash, size_bytes, row_count, "
                            "stats, bundled, created_at) VALUES (:project, :name, 'text', :path, :hash, 14, 1, '{}', "
                            ":bundled, CURRENT_TIMESTAMP)"),
                    {"project": project_id, "name": f"d{number}", "path": f"{content_hash}.jsonl",
                     "hash": content_hash, "bundled": False},
                )
        upgrade(migration_db_url, "0005")
        with engine.connect() as conn:
            seeds = dict(conn.execute(sa.text("SELECT content_hash, split_seed FROM dataset")).all())
        assert seeds == {content_hash: split_seed_for(content_hash) for content_hash in hashes}
        assert len(set(seeds.values())) == 2
    finally:
        engine.dispose()
        downgrade(migration_db_url)
