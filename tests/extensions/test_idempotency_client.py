"""The lab side of ``Idempotency-Key``: the SDK's ``create_call`` keeps one key across its retries,
and the server extension forwards the panel's key (and the service's replay header).

Against a small recording HTTP server that answers as a flaky gateway would (a real socket); the
real service and a connection dropped after its commit: tests/services/core/test_idempotency.py.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from yitong_lab import client as clientmod
from yitong_lab.client import Client, YitongError


class Recorder(BaseHTTPRequestHandler):
    """Answers the first ``len(server.script)`` requests with the scripted (status, body, type),
    then 201 with the request's key; records (method, path, Idempotency-Key)."""

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        key = self.headers.get("Idempotency-Key")
        self.server.seen.append((self.command, self.path, key))
        status, body, ctype = (
            self.server.script.pop(0) if self.server.script else (201, json.dumps({"key": key}), "application/json")
        )
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if status == 201:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def recorder(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.daemon_threads, server.seen, server.script = True, [], []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(clientmod, "CREATE_BACKOFF", 0.01)
    yield server, f"http://127.0.0.1:{server.server_address[1]}/services/yitong/api/v1"
    server.shutdown()
    server.server_close()


GATEWAY = (503, "<html>Service Unavailable</html>", "text/html")


@pytest.mark.parametrize(
    "script, tries, status",
    [
        ([], 1, 201),
        ([GATEWAY, (502, "bad gateway", "text/plain"), (504, "", "text/plain")], 4, 201),  # same key each time
        ([GATEWAY] * clientmod.CREATE_TRIES, clientmod.CREATE_TRIES, 503),  # bounded
        ([(503, json.dumps({"detail": "this platform's backend has no job runner yet"}), "application/json")], 1, 503),
        ([(422, json.dumps({"detail": "spec.command: Field required"}), "application/json")], 1, 422),
    ],
)
def test_create_call_retries_gateway_errors_with_one_key(recorder, script, tries, status):
    server, url = recorder
    server.script = list(script)
    c = Client(url=url, token="t")
    try:
        answer = c.submit_job({"name": "x", "vc": "v", "command": "true"})
        assert status == 201 and answer["key"] == server.seen[0][2]
    except YitongError as error:
        assert error.status == status
    assert len(server.seen) == tries
    keys = {k for _, _, k in server.seen}
    assert len(keys) == 1 and len(next(iter(keys))) == 36  # one UUID for all tries of this submit
    c.submit_job({"name": "x", "vc": "v", "command": "true"})
    assert server.seen[-1][2] not in keys  # the next submit is a new create: a new key


def test_create_call_retries_a_refused_connection_with_one_key(monkeypatch):
    """Nothing listens on the port: every try fails to connect; after CREATE_TRIES the caller is told."""
    import socket

    monkeypatch.setattr(clientmod, "CREATE_BACKOFF", 0.01)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(YitongError) as info:
        Client(url=f"http://127.0.0.1:{port}/api", token="t").clone_job(3)
    assert info.value.status == 0 and f"({clientmod.CREATE_TRIES} tries)" in info.value.detail


async def test_server_extension_forwards_the_key_and_the_replay_header(recorder, jp_fetch, monkeypatch):
    server, url = recorder
    monkeypatch.setenv("YITONG_API_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "alice-token")
    response = await jp_fetch(
        "yitong",
        "api",
        "jobs",
        method="POST",
        body=json.dumps({"name": "x"}),
        headers={"Idempotency-Key": "panel-key-1"},
    )
    assert response.code == 201 and json.loads(response.body) == {"key": "panel-key-1"}
    assert response.headers["Idempotent-Replayed"] == "true"
    assert server.seen == [("POST", "/services/yitong/api/v1/jobs", "panel-key-1")]
    await jp_fetch("yitong", "api", "jobs", method="POST", body=json.dumps({"name": "x"}))
    assert server.seen[-1][2] is None  # no key from the browser: none invented on the way
