"""The server extension's browser-upload routes in a real Jupyter server (``jp_fetch``): files
streamed into a staging directory, then the SDK commit in a thread, polled as a task."""

import asyncio
import json

import pytest
from blake3 import blake3
from tornado.httpclient import HTTPClientError


def decode(response):
    return json.loads(response.body) if response.body else None


async def task_result(jp_fetch, task):
    for _ in range(200):
        state = decode(await jp_fetch("yitong", "tasks", task))
        if state["state"] != "running":
            return state
        await asyncio.sleep(0.05)
    raise TimeoutError(state)


async def start(jp_fetch, dataset="vision/web", message="from the browser"):
    body = json.dumps({"dataset": dataset, "message": message})
    return decode(await jp_fetch("yitong", "datasets", "uploads", method="POST", body=body))["id"]


async def test_upload_folder_then_commit(yt_env, jp_fetch):
    files = {"a.txt": b"alpha", "sub dir/é.png": b"\x89PNG" * 1000, "empty": b""}
    upload = await start(jp_fetch)
    for path, data in files.items():
        response = await jp_fetch(
            "yitong",
            "datasets",
            "uploads",
            upload,
            "files",
            *path.split("/"),
            method="PUT",
            body=data,
            allow_nonstandard_methods=True,
        )
        assert (response.code, decode(response)) == (201, {"path": path, "size": len(data)})
    response = await jp_fetch("yitong", "datasets", "uploads", upload, "commit", method="POST", body=b"")
    assert response.code == 202
    state = await task_result(jp_fetch, decode(response)["task"])
    assert {k: state[k] for k in ("state", "version", "error", "dataset")} == {
        "state": "done",
        "version": 1,
        "error": None,
        "dataset": "vision/web",
    }
    assert state["done"] == state["total"] > 0
    version = yt_env.datasets.datasets["vision/web"]["versions"][0]
    assert version["message"] == "from the browser" and version["author"] == "alice"
    assert {f["path"]: f["hash"] for f in version["files"]} == {p: blake3(d).hexdigest() for p, d in files.items()}
    with pytest.raises(HTTPClientError) as info:  # an upload commits once
        await jp_fetch("yitong", "datasets", "uploads", upload, "commit", method="POST", body=b"")
    assert info.value.code == 404


async def test_refusals(yt_env, jp_fetch, monkeypatch, http_server_client, jp_auth_header, jp_base_url):
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("yitong", "datasets", "uploads", method="POST", body=json.dumps({"dataset": "nope"}))
    assert info.value.code == 400
    assert "is not a dataset name" in decode(info.value.response)["detail"]
    upload = await start(jp_fetch)
    for bad in ("a/%2E%2E/x", "a/../../x", "a//x", "a%5Cb"):  # never outside the staging directory
        with pytest.raises(HTTPClientError) as info:
            await http_server_client.fetch(
                f"{jp_base_url}yitong/datasets/uploads/{upload}/files/{bad}",
                method="PUT",
                body=b"x",
                headers=jp_auth_header,
            )
        assert info.value.code in (400, 404), bad
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "yitong",
            "datasets",
            "uploads",
            upload,
            "files",
            "x",
            method="PUT",
            body=b"x",
            headers={"Authorization": ""},
        )
    assert info.value.code == 403
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "bob-token")  # the service refuses: the task says why
    await jp_fetch("yitong", "datasets", "uploads", upload, "files", "x", method="PUT", body=b"x")
    response = await jp_fetch("yitong", "datasets", "uploads", upload, "commit", method="POST", body=b"")
    state = await task_result(jp_fetch, decode(response)["task"])
    assert (state["state"], state["error"]) == ("error", "bob is not a member of VC vision")
    other = await start(jp_fetch)
    assert (await jp_fetch("yitong", "datasets", "uploads", other, method="DELETE")).code == 204
