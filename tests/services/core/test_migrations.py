"""Alembic: `upgrade head` builds exactly the ORM's schema; it is idempotent and reversible."""

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from yitong_services.core.db import MIGRATIONS, Database
from yitong_services.core.models import Base
from yitong_services.datasets import models as _datasets  # noqa: F401  (every capability's tables)
from yitong_services.jobs import models as _jobs  # noqa: F401
from yitong_services.vcs import models as _vcs  # noqa: F401


def _config(conn) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def test_upgrade_matches_models_and_is_idempotent(db_url):
    db = Database(db_url)
    try:
        db.upgrade()
        db.upgrade()
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn)
            head = ScriptDirectory.from_config(_config(conn)).get_current_head()
            assert context.get_current_revision() == head
            assert compare_metadata(context, Base.metadata) == []
        assert {"vcs", "profiles", "allocations", "seed_log"} <= set(inspect(db.engine).get_table_names())
        with db.engine.begin() as conn:
            command.downgrade(_config(conn), "base")
        assert "vcs" not in inspect(db.engine).get_table_names()
        db.upgrade()
        assert "allocations" in inspect(db.engine).get_table_names()
    finally:
        db.dispose()


async def test_seed_once_even_after_delete(service, hub, db_url, tmp_path):
    assert (await service.call("admin", "DELETE", "vcs/default")).status_code == 204
    from yitong_services.vcs.seed import seed

    assert seed(service.ctx.db, service.ctx.settings) == []
    assert (await service.call("admin", "GET", "vcs/default")).status_code == 404
