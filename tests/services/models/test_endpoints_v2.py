"""The ``/endpoints/{name}/v2/...`` pass-through (routes/endpoints_v2.py) in-process, in front of
replicas that are real HTTP servers: a uvicorn serving a small V2 app written here (it answers
as MLServer does where the route cares: an empty 200 for health, FastAPI's ``{"detail": [...]}``
for a body it rejects), so refusals, error shapes, headers, the query, the router's retry on a
replica that refused the connection and keys can be checked without MLServer's minutes (the
same route with real MLServer replicas: test_endpoints.py, test_v2_conformance.py).

The endpoint's rows are written straight into the database (a replica is a job of the VC's queue
in life; the job manager is off here, so nothing changes them meanwhile). Each replica listens on a
unix socket, as MLServer's replicas do (models/replica_server.py), held by this process's uid."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import httpx
import pytest
import uvicorn
from helpers import free_port
from sqlalchemy import select

from yitong_services.datasets.models import Dataset, DatasetVersion
from yitong_services.models.models import Endpoint, Model, ModelVersion
from yitong_services.routes import endpoints_v2

SIGNATURE = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}], "outputs": []}
INFER = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}


async def replica_app(scope, receive, send) -> None:
    """A V2 server: infer echoes the request and the query; model ``broken`` rejects its body."""
    if scope["type"] != "http":
        return
    body = b""
    while (message := await receive())["type"] == "http.request":
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    path = scope["path"]
    headers = [(b"content-type", b"application/json"), (b"x-replica", b"yes")]
    if path in ("/v2/health/ready", "/v2/health/live"):
        status, out = 200, b""
    elif path == "/v2/models/iris":  # MLServer's metadata of a model without a settings signature
        status = 200
        out = json.dumps({"name": "iris", "versions": [], "platform": "", "inputs": [], "outputs": []}).encode()
    elif path == "/v2/models/broken/infer":
        status, out = 422, json.dumps({"detail": [{"loc": ["body", "inputs"], "msg": "field required"}]}).encode()
    elif path.endswith("/infer"):
        said = dict(scope["headers"])
        status = 200
        out = json.dumps(
            {
                "model_name": path.split("/")[3],
                "query": scope["query_string"].decode(),
                "header": said.get(b"inference-header-content-length", b"").decode(),
                "authorization": said.get(b"authorization", b"").decode(),
                "content_type": said.get(b"content-type", b"").decode(),
                "method": scope["method"],
                "outputs": json.loads(body)["inputs"],
            }
        ).encode()
        headers.append((b"inference-header-content-length", str(len(out)).encode()))
    else:
        status, out = 404, json.dumps({"error": f"Model {path} not found"}).encode()
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": out})


def nowhere(deep: int = 0) -> str:
    """A socket path where nothing listens (a stopped replica's), ``deep`` folders further down."""
    folder = os.path.join(tempfile.mkdtemp(prefix="yt-v2-"), *(["d" * 50] * deep))
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "http.sock")


@contextlib.asynccontextmanager
async def replica(deep: int = 0):
    """A V2 server on a unix socket (bound from its folder, as a replica does); its path."""
    path = nowhere(deep)
    here = os.getcwd()
    os.chdir(os.path.dirname(path))  # a path over AF_UNIX's 108 bytes binds relative to its folder
    try:
        server = uvicorn.Server(uvicorn.Config(replica_app, uds="http.sock", log_level="warning"))
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
    finally:
        os.chdir(here)
    try:
        yield path
    finally:
        server.should_exit = True
        await task
        shutil.rmtree(os.path.join(os.path.dirname(path), *([".."] * deep)), ignore_errors=True)


@pytest.fixture
async def svc(service_factory):
    async with service_factory(jobs={"enabled": False}) as s:
        yield s


def put_endpoint(svc, sockets: list[str], name: str = "iris", uid: int | None = None) -> None:
    """Endpoint ``name`` of VC vision (alice's), one routed replica per socket (held by ``uid``,
    by default this process's), equal shares."""
    with svc.ctx.db.session() as s:
        d = Dataset(vc="vision", name=f"{name}-files", owner="alice")
        s.add(d)
        s.flush()
        dv = DatasetVersion(dataset_id=d.id, number=1, manifest="0" * 64, author="alice")
        m = Model(vc="vision", name=name, owner="alice", dataset_id=d.id)
        s.add_all([dv, m])
        s.flush()
        v = ModelVersion(model_id=m.id, number=1, dataset_version_id=dv.id, author="alice", signature=SIGNATURE)
        s.add(v)
        s.flush()
        uid = os.geteuid() if uid is None else uid
        replicas = [
            {"job": 1000 + i, "version_id": v.id, "number": 1, "dir": "", "weight": 100, "routed": True}
            | ({"socket": where, "uid": uid} if isinstance(where, str) else {"port": where})
            for i, where in enumerate(sockets)
        ]
        s.add(
            Endpoint(
                name=name, vc="vision", owner="alice", model_id=m.id, version_id=v.id, state="ready", replicas=replicas
            )
        )
        s.commit()


async def test_infer_health_errors_and_the_vc_boundary(svc):
    async with replica() as path:
        put_endpoint(svc, [path])
        r = await svc.call(
            "alice",
            "POST",
            "endpoints/iris/v2/models/iris/infer?trace=1&a=b%20c",
            content=json.dumps(INFER),
            headers={
                "Content-Type": "application/json",
                "Inference-Header-Content-Length": str(len(json.dumps(INFER))),
            },
        )
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["model_name"] == "iris" and doc["outputs"] == INFER["inputs"]
        assert doc["query"] == "trace=1&a=b%20c"  # the query as sent
        # the binary extension's header is read here: the model server gets the JSON request it means
        assert (doc["header"], doc["content_type"]) == ("", "application/json")
        assert doc["authorization"] == ""  # the caller's token never reaches the model server
        assert r.headers["inference-header-content-length"] == str(len(r.content))
        assert "x-replica" not in r.headers  # only the protocol's headers come back
        # MLServer answers health with an empty 200: the protocol's body is filled in
        r = await svc.call("alice", "GET", "endpoints/iris/v2/health/ready")
        assert (r.status_code, r.json()) == (200, {"ready": True})
        # the model server's own refusal, as a sentence in the protocol's error shape
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/broken/infer", json=INFER)
        assert r.status_code == 422
        assert r.json() == {"error": "endpoint iris: the request does not fit the protocol: inputs: field required"}
        r = await svc.call("alice", "GET", "endpoints/iris/v2/models/nope")
        assert (r.status_code, r.json()) == (404, {"error": "Model /v2/models/nope not found"})  # passed as it is
        # the platform's refusals, in the same shape
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json={"inputs": [{"name": "x"}]})
        assert r.status_code == 400 and r.json()["error"].startswith("endpoint iris: ")
        wrong = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json=wrong)
        assert r.status_code == 400 and "the model takes [-1, 4]" in r.json()["error"]
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", content=b"{not json")
        assert r.status_code == 400 and "not JSON" in r.json()["error"]
        r = await svc.call(None, "GET", "endpoints/iris/v2/health/ready")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert r.json()["error"].startswith("authentication required")
        # another VC's member: the sentence of an endpoint that does not exist
        assert (await svc.call("bob", "GET", "endpoints/iris/v2/health/ready")).json() == {
            "error": "there is no endpoint iris"
        }
        assert (await svc.call("bob", "GET", "endpoints/none/v2/health/ready")).json() == {
            "error": "there is no endpoint none"
        }
        # methods a path does not take: 405 in the error shape, with Allow; OPTIONS says what it takes
        for method, path, allow in [
            ("DELETE", "models/iris", "GET, OPTIONS"),
            ("POST", "", "GET, OPTIONS"),
            ("HEAD", "health/ready", "GET, OPTIONS"),
            ("GET", "models/iris/infer", "POST, OPTIONS"),
            ("PUT", "models/iris/versions/v1/infer", "POST, OPTIONS"),
        ]:
            r = await svc.call("alice", method, "endpoints/iris/v2" + (f"/{path}" if path else ""))
            assert (r.status_code, r.headers.get("allow")) == (405, allow), (method, path)
            if method != "HEAD":
                assert r.json() == {"error": f"{method} is not a method of /v2/{path}: use {allow[:-9]}"}
        r = await svc.call(None, "OPTIONS", "endpoints/iris/v2/models/iris/infer")
        assert (r.status_code, r.headers["allow"], r.content) == (204, "POST, OPTIONS", b"")
        # the same through the route table (an app without the middleware in front)
        app = svc.app

        async def router_only(scope, receive, send):
            scope["app"] = app
            await app.router(scope, receive, send)

        async with httpx.AsyncClient(transport=httpx.ASGITransport(router_only), base_url="http://yitong.test") as c:
            r = await c.options(f"{svc.ctx.prefix}api/v1/endpoints/iris/v2/models/iris/infer")
            assert (r.status_code, r.headers["allow"]) == (204, "POST, OPTIONS")
            r = await c.delete(f"{svc.ctx.prefix}api/v1/endpoints/iris/v2/models/iris", headers=svc.headers("alice"))
            assert (r.status_code, r.headers["allow"], r.json()["error"]) == (
                405,
                "GET, OPTIONS",
                "DELETE is not a method of /v2/models/iris: use GET",
            )


async def test_body_limit(svc, monkeypatch):
    monkeypatch.setattr(endpoints_v2, "MAX_BODY", 100)  # a small limit, so the test sends little
    async with replica() as path:
        put_endpoint(svc, [path])
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", content=b"x" * 101)
        assert r.status_code == 413
        assert r.json() == {"error": "a request to endpoint iris of 101 bytes is over the 100-byte limit"}

        async def chunks():  # no Content-Length: counted as it arrives
            for _ in range(3):
                yield b"x" * 40

        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", content=chunks())
        assert r.status_code == 413 and r.json() == {"error": "a request to endpoint iris is over the 100-byte limit"}


async def test_a_replica_that_refuses_the_connection_is_skipped(svc, tmp_path):
    """Two routed replicas, one stopped (nothing listens on its socket): every request is answered
    by the other; with both stopped, a 503 sentence."""
    async with replica() as path:
        put_endpoint(svc, [str(tmp_path / "http.sock"), path])
        for _ in range(6):  # the weighted round robin sends half of them to the stopped one first
            r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json=INFER)
            assert r.status_code == 200, r.text
        assert svc.app.state.endpoint_router.inflight == {}  # every enter has its leave
    r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json=INFER)
    assert r.status_code == 503
    assert r.json() == {"error": "endpoint iris is not answering (queued, starting, or stopped): try again shortly"}


async def test_keys_are_checked_on_every_call(svc):
    async with replica() as path:
        put_endpoint(svc, [path])
        put_endpoint(svc, [path], name="other")
        r = await svc.call("admin", "POST", "endpoints/iris/keys", json={"note": "outside"})
        assert r.status_code == 201, r.text
        key, key_id = r.json()["key"], r.json()["id"]
        bearer = {"Authorization": f"Bearer {key}"}
        r = await svc.call(None, "POST", "endpoints/iris/v2/models/iris/infer", json=INFER, headers=bearer)
        assert r.status_code == 200, r.text
        r = await svc.call(None, "GET", "endpoints/other/v2/health/ready", headers=bearer)
        assert (r.status_code, r.json()) == (404, {"error": "there is no endpoint other"})  # another endpoint's
        assert (await svc.call("admin", "DELETE", f"endpoints/iris/keys/{key_id}")).status_code == 204
        r = await svc.call(None, "GET", "endpoints/iris/v2/health/ready", headers=bearer)
        assert r.status_code == 401
        assert r.json() == {"error": "this endpoint key is not valid (revoked, or never issued)"}


async def test_the_route_table_serves_it_too_and_metrics_name_the_route(svc):
    """Without the middleware in front (an app built from the routers alone), the registered
    route answers the same; with it, the request metrics still name the route."""
    async with replica() as path:
        put_endpoint(svc, [path])
        app = svc.app

        async def router_only(scope, receive, send):
            scope["app"] = app
            await app.router(scope, receive, send)

        async with httpx.AsyncClient(transport=httpx.ASGITransport(router_only), base_url="http://yitong.test") as c:
            r = await c.get(f"{svc.ctx.prefix}api/v1/endpoints/iris/v2/health/ready", headers=svc.headers("alice"))
            assert (r.status_code, r.json()) == (200, {"ready": True})
        assert (await svc.call("alice", "GET", "endpoints/iris/v2/health/live")).json() == {"live": True}
        text = (await svc.call("admin", "GET", f"{svc.ctx.prefix}metrics")).text
        assert 'route="/endpoints/{name}/v2/{rest:path}",status="200"' in text


async def test_a_socket_of_another_account_is_never_sent_a_request(svc, caplog):
    """The listener's uid is checked on every new connection (``SO_PEERCRED``): a replica whose
    socket is held by another account's process than the replica's (here: this process, while
    the replica says uid 54321) is not sent a byte, and the caller is told why. A replica with a
    TCP port (an earlier release's) is not called either. (The same with real accounts and
    MLServer: test_endpoints_multi_user.py.)"""
    seen: list[bytes] = []

    async def listener(reader, writer):
        seen.append(await reader.read(100))
        writer.close()

    folder = tempfile.mkdtemp(prefix="yt-v2-")
    server = await asyncio.start_unix_server(listener, path=os.path.join(folder, "http.sock"))
    try:
        put_endpoint(svc, [os.path.join(folder, "http.sock")], uid=54321)
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json=INFER)
        assert r.status_code == 503
        error = r.json()["error"]
        assert error.startswith("endpoint iris is not answering: replica v1 (job 1000) was not called: ")
        assert f"is held by another account's process (uid {os.geteuid()}, pid {os.getpid()}), not uid 54321" in error
        await asyncio.sleep(0.05)
        assert seen in ([], [b""])  # connected (to ask the kernel who listens), never sent a byte
        put_endpoint(svc, [free_port()], name="old")
        r = await svc.call("alice", "POST", "endpoints/old/v2/models/old/infer", json=INFER)
        assert r.status_code == 503 and "listens on a TCP port (an earlier release)" in r.json()["error"]
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_socket_path_over_the_unix_limit_is_reached_through_its_folder(svc):
    """A data directory deep enough that the replica's socket path is over AF_UNIX's 108 bytes:
    the route connects through the folder's descriptor (``/proc/self/fd/<n>/http.sock``)."""
    async with replica(deep=3) as path:
        assert len(path.encode()) > 108
        put_endpoint(svc, [path])
        r = await svc.call("alice", "POST", "endpoints/iris/v2/models/iris/infer", json=INFER)
        assert r.status_code == 200, r.text


@contextlib.asynccontextmanager
async def served(svc):
    """The service's app on a TCP port of this machine (for clients that are not ASGI: tritonclient, curl)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(svc.app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}{svc.ctx.prefix}api/v1"
    finally:
        server.should_exit = True
        await task


def put_signature(svc, name: str, signature: dict) -> None:
    with svc.ctx.db.session() as s:
        e = s.scalar(select(Endpoint).where(Endpoint.name == name))
        s.get(ModelVersion, e.version_id).signature = signature
        s.commit()


async def test_tritonclient_binary_data_bytes_and_metadata(svc):
    """tritonclient's HTTP client (nobody here wrote it) with ``binary_data=True``, its default: the
    request reaches the model server as the JSON it means and the answer reads back; a BYTES input
    the signature does not take is a 400 in the error shape; metadata carries the signature."""
    import numpy as np
    import tritonclient.http as th
    from tritonclient.utils import InferenceServerException

    async with replica() as path, served(svc) as api:
        put_endpoint(svc, [path])
        url = api.split("://", 1)[1] + "/endpoints/iris"

        def call(method: str, *args, **kw):  # in a worker thread: the client is gevent's, made and used there
            c = th.InferenceServerClient(url=url)
            try:
                return getattr(c, method)(*args, **kw)
            finally:
                c.close()

        auth = {"Authorization": f"token {svc.hub.tokens['alice']}"}
        x = th.InferInput("x", [2, 4], "FP32")
        arr = np.arange(8, dtype=np.float32).reshape(2, 4)
        x.set_data_from_numpy(arr, binary_data=True)
        out = th.InferRequestedOutput("x", binary_data=True)
        result = await asyncio.to_thread(call, "infer", "iris", [x], outputs=[out], headers=auth)
        assert result.as_numpy("x").tolist() == arr.tolist()
        assert result.get_response()["content_type"] == "application/json"
        text = th.InferInput("x", [2], "BYTES")
        text.set_data_from_numpy(np.array([b"a b", "ü".encode()], dtype=object), binary_data=True)
        with pytest.raises(InferenceServerException) as refused:
            await asyncio.to_thread(call, "infer", "iris", [text], headers=auth)
        assert refused.value.status() == "400"
        assert refused.value.message() == "endpoint iris: input 'x' is BYTES (strings); the model takes FP32 (numbers)"
        put_signature(svc, "iris", {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [-1]}], "outputs": []})
        result = await asyncio.to_thread(call, "infer", "iris", [text], headers=auth)
        assert result.get_response()["outputs"] == [
            {"name": "x", "datatype": "BYTES", "shape": [2], "data": ["a b", "ü"]}
        ]
        put_signature(svc, "iris", SIGNATURE | {"outputs": [{"name": "y", "datatype": "INT64", "shape": [-1]}]})
        meta = await asyncio.to_thread(call, "get_model_metadata", "iris", headers=auth)
        assert (meta["inputs"], meta["outputs"]) == (
            SIGNATURE["inputs"],
            [{"name": "y", "datatype": "INT64", "shape": [-1]}],
        )
        # a binary part that does not add up: a sentence, never a 500
        header = json.dumps(
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "parameters": {"binary_data_size": 16}}]}
        )
        r = await svc.call(
            "alice",
            "POST",
            "endpoints/iris/v2/models/iris/infer",
            content=header.encode() + b"\0" * 12,
            headers={"Inference-Header-Content-Length": str(len(header)), "Content-Type": "application/octet-stream"},
        )
        assert (r.status_code, r.json()) == (
            400,
            {"error": "endpoint iris: input 'x': binary_data_size 16 runs past the body"},
        )


async def test_the_docs_curl_example_runs_as_written(svc):
    """docs/models.md's curl block, as written, with a notebook terminal's YITONG_API_URL and
    JUPYTERHUB_API_TOKEN (curl -d sends no JSON Content-Type: the infer still goes through)."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "models.md").read_text()
    block = re.search(r"```bash\n(curl [^`]*?/models/iris/infer\"\n)```", page).group(1)
    async with replica() as path, served(svc) as api:
        put_endpoint(svc, [path])
        env = {"PATH": os.environ["PATH"], "YITONG_API_URL": api, "JUPYTERHUB_API_TOKEN": svc.hub.tokens["alice"]}
        run = await asyncio.create_subprocess_exec(
            "bash", "-c", block, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(run.communicate(), 60)
        assert run.returncode == 0, (out, err)
        doc = json.loads(out)
        assert (doc["model_name"], doc["content_type"]) == ("iris", "application/json")
        assert doc["outputs"] == [
            {"name": "predict", "shape": [1, 4], "datatype": "FP32", "data": [[5.1, 3.5, 1.4, 0.2]]}
        ]
        env["JUPYTERHUB_API_TOKEN"] = "wrong"
        run = await asyncio.create_subprocess_exec("bash", "-c", block, env=env, stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(run.communicate(), 60)
        assert run.returncode == 22 and json.loads(out)["error"].startswith("authentication required")
