"""Alembic environment: run with the connection handed over by ``Database.upgrade``."""

from alembic import context
from sqlalchemy import create_engine

# every capability's tables: the metadata the migrations are checked against
from yitong_services.alerts import models as _alerts  # noqa: F401
from yitong_services.core.models import Base
from yitong_services.datasets import models as _datasets  # noqa: F401
from yitong_services.hpo import models as _hpo  # noqa: F401
from yitong_services.jobs import models as _jobs  # noqa: F401
from yitong_services.models import models as _models  # noqa: F401
from yitong_services.ssh import models as _ssh  # noqa: F401
from yitong_services.vcs import models as _vcs  # noqa: F401

config = context.config
connection = config.attributes.get("connection")


def _run(conn) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:  # `alembic -x url=... revision --autogenerate` by hand
    url = context.get_x_argument(as_dictionary=True).get("url", "sqlite:///.yitong/yitong.sqlite")
    with create_engine(url).begin() as conn:
        _run(conn)
