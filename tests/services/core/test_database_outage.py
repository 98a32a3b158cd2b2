"""A database that stops answering, or whose disk is full: every answer is a JSON sentence (503
with ``Retry-After``, 507), ``/health`` says so, and the service answers again once it is back.

The outage is real: the service reaches PostgreSQL (the CI's server) through a TCP relay in this
test, and the relay is cut and restored (stopping the shared server itself would break the other
tests' databases). The full disk is SQLite's own ``SQLITE_FULL``, reached with
``PRAGMA max_page_count``.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import pytest
from helpers import require
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError

from tests.services.conftest import Service as _Service
from tests.services.conftest import _postgres_url, build_app, wipe
from yitong_services.core.errors import database_failure


class Relay:
    """``127.0.0.1:<port>`` -> ``target``, byte for byte; :meth:`cut` closes the listener and
    every relayed connection (a server gone), :meth:`restore` listens on the same port again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        assert self.listener is not None
        with contextlib.suppress(OSError):  # wakes the accepting thread (a bare close would not)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_database_failures_are_told_apart(tmp_path):
    """Real driver errors: a refused PostgreSQL connection (503), SQLite's full database (507),
    and an ordinary constraint violation (None: a bug, left to be a 500)."""
    refused = create_engine(f"postgresql+psycopg://x:y@127.0.0.1:{_free_port()}/none")
    with pytest.raises(OperationalError) as info:
        refused.connect()
    status, sentence = database_failure(info.value)
    assert status == 503 and "not answering" in sentence

    full = create_engine(f"sqlite:///{tmp_path / 'full.sqlite'}")
    with full.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)"))
    with pytest.raises(OperationalError) as info, full.begin() as conn:
        pages = conn.execute(text("PRAGMA page_count")).scalar()
        conn.execute(text(f"PRAGMA max_page_count = {pages + 2}"))
        for _ in range(50):
            conn.execute(text("INSERT INTO t (b) VALUES (zeroblob(100000))"))
    status, sentence = database_failure(info.value)
    assert status == 507 and "no space left" in sentence

    with pytest.raises(IntegrityError) as info, full.begin() as conn:
        conn.execute(text("INSERT INTO t (id) VALUES (1)"))
        conn.execute(text("INSERT INTO t (id) VALUES (1)"))
    assert database_failure(info.value) is None


async def test_a_database_outage_is_a_json_503_and_health_says_so(hub, tmp_path):
    url = _postgres_url()
    require("PostgreSQL", url is not None, "set YITONG_TEST_POSTGRES_URL to a reachable database")
    assert url is not None
    wipe(url)
    real = make_url(url)
    relay = Relay((real.host or "127.0.0.1", real.port or 5432))
    via = real.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    app = build_app(via, tmp_path / "data", hub)
    try:
        async with app.router.lifespan_context(app):
            svc = _Service(app, hub)
            assert (await svc.call(None, "GET", "health")).json()["status"] == "ok"
            assert (await svc.call("admin", "GET", "vcs")).status_code == 200

            relay.cut()
            health = await svc.call(None, "GET", "health")
            assert health.status_code == 503 and health.headers["Retry-After"] == "5"
            assert health.json()["status"] == "unavailable"
            for who, method, path in [("admin", "GET", "vcs"), ("alice", "GET", "jobs"), ("admin", "GET", "datasets")]:
                r = await svc.call(who, method, path)
                assert r.status_code == 503, (path, r.status_code, r.text[:300])
                assert r.headers["content-type"] == "application/json" and r.headers["Retry-After"] == "5"
                assert r.json()["detail"].startswith("the platform's database is not answering"), r.text

            relay.restore()
            assert (await svc.call(None, "GET", "health")).json()["status"] == "ok"
            assert (await svc.call("admin", "GET", "vcs")).status_code == 200
            await svc.client.aclose()
    finally:
        relay.cut()
