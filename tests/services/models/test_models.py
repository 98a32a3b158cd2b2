"""The model registry over REST on the local backend: register from a real finished job's
outputs (lineage from its ledger record) and from uploaded files, aliases that move, metric
comparison, the VC boundary, and refusals."""

from __future__ import annotations

import os

import pytest
from jobs_helpers import py_job, wait_state

FAST = {"jobs": {"poll_interval": 0.1}}
SIGNATURE = {
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}],
    "outputs": [{"name": "y", "datatype": "INT64", "shape": [-1]}],
}


@pytest.fixture
async def svc(service_factory):
    async with service_factory(**FAST) as s:
        yield s


async def make_model(svc, who="alice", vc="vision", name="iris"):
    r = await svc.call(who, "POST", "models", json={"vc": vc, "name": name, "description": "flowers"})
    assert r.status_code == 201, r.text
    return r.json()


async def test_register_from_a_finished_job_with_lineage(svc):
    r = await svc.data.push("alice", "vision/iris-data", {"train.csv": b"1,2,3,4,0\n"})
    assert r.status_code == 201, r.text
    code = (
        "import os, pathlib; out = pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'out', 'model');"
        "out.mkdir(parents=True); (out / 'model.joblib').write_bytes(b'weights');"
        "(out / 'conf' ).mkdir(); (out / 'conf' / 'settings.json').write_text('{}');"
        "os.symlink('/etc/passwd', out / 'leak');"
        "pathlib.Path(os.environ['YITONG_OUTPUT_DIR'], 'log.txt').write_text('not the model')"
    )
    spec = py_job("train", "vision", code, inputs=[{"dataset": "vision/iris-data@1"}], code={"commit": "c0ffee"})
    job = (await svc.call("alice", "POST", "jobs", json=spec)).json()
    done = await wait_state(svc, "alice", job["id"])
    assert done["state"] == "succeeded", done
    await make_model(svc)

    body = {"job": job["id"], "path": "out/model", "framework": "sklearn", "format": "joblib", "signature": SIGNATURE}
    r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body | {"metrics": {"accuracy": 0.9}})
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["number"], v["files"], v["bytes"], v["framework"], v["author"]) == (1, 2, 9, "sklearn", "alice")
    assert v["metrics"] == {"accuracy": 0.9} and v["signature"]["inputs"][0]["shape"] == [-1, 4]
    lineage = v["lineage"]
    assert (lineage["job"], lineage["run"], lineage["path"]) == (job["id"], done["runs"][0], "out/model")
    assert lineage["code"]["commit"] == "c0ffee"
    assert lineage["datasets"] == [
        {"dataset": "vision/iris-data@1", "version": 1, "manifest": job["inputs"][0]["manifest"]}
    ]
    # the files are a version of the backing dataset, readable like any: the link was not followed
    manifest = (await svc.call("alice", "GET", "datasets/vision/model-iris/versions/1/manifest")).json()
    assert sorted(f["path"] for f in manifest["files"]) == ["conf/settings.json", "model.joblib"]
    # the registry holds the dataset version: it cannot be deleted under the model
    r = await svc.call("alice", "DELETE", "datasets/vision/model-iris/versions/1")
    assert r.status_code == 409 and "model vision/iris:1" in r.json()["detail"]
    # the same outputs again: 409 naming the version
    r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body)
    assert r.status_code == 409 and "version 1 already" in r.json()["detail"]
    # a path through a link, a path outside, a path that is not there
    for path, status in (("out/model/leak/x", 422), ("../../etc", 422), ("nothing", 404)):
        r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body | {"path": path})
        assert r.status_code == status, (path, r.text)


async def test_job_must_have_succeeded_and_be_of_the_vc(svc):
    failed = (await svc.call("alice", "POST", "jobs", json=py_job("bad", "vision", "raise SystemExit(3)"))).json()
    await wait_state(svc, "alice", failed["id"])
    await make_model(svc)
    r = await svc.call("alice", "POST", "models/vision/iris/versions", json={"job": failed["id"]})
    assert r.status_code == 409 and "is failed" in r.json()["detail"]
    other = (await svc.call("bob", "POST", "jobs", json=py_job("nlp", "nlp", "print(1)"))).json()
    await wait_state(svc, "bob", other["id"])
    r = await svc.call("admin", "POST", "models/vision/iris/versions", json={"job": other["id"]})
    assert r.status_code == 422 and "registers only jobs of VC vision" in r.json()["detail"]
    r = await svc.call("alice", "POST", "models/vision/iris/versions", json={"job": other["id"]})
    assert r.status_code == 404  # alice cannot see bob's job in nlp


async def test_files_aliases_compare_and_the_vc_boundary(svc):
    await make_model(svc)
    versions = []
    for i, acc in enumerate((0.81, 0.93)):
        blob = os.urandom(64) + bytes([i])
        await svc.data.upload("alice", [blob])
        body = {"files": svc.data.entries({"model.bin": blob}), "metrics": {"accuracy": acc, f"only{i}": 1.0}}
        r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body | {"tags": {"run": str(i)}})
        assert r.status_code == 201, r.text
        versions.append(r.json()["number"])
    assert versions == [1, 2]

    r = await svc.call("alice", "PUT", "models/vision/iris/aliases/production", json={"version": 1})
    assert r.status_code == 200 and r.json()["aliases"] == ["production"]
    r = await svc.call("alice", "PUT", "models/vision/iris/aliases/production", json={"version": 2})
    assert r.json()["number"] == 2  # moved
    r = await svc.call("alice", "GET", "models/vision/iris/versions/production")
    assert r.json()["number"] == 2 and r.json()["tags"] == {"run": "1"}
    listed = (await svc.call("alice", "GET", "models/vision/iris/versions")).json()
    assert [(v["number"], v["aliases"]) for v in listed] == [(2, ["production"]), (1, [])]
    assert (await svc.call("alice", "GET", "models/vision/iris")).json()["aliases"] == {"production": 2}
    for bad in ("latest", "7", "v2"):
        r = await svc.call("alice", "PUT", f"models/vision/iris/aliases/{bad}", json={"version": 1})
        assert r.status_code == 422, bad
    r = await svc.call("alice", "PUT", "models/vision/iris/aliases/staging", json={"version": 9})
    assert r.status_code == 404 and "no version or alias 9" in r.json()["detail"]

    cmp = (await svc.call("alice", "GET", "models/vision/iris/compare?versions=1,production")).json()
    assert cmp["metrics"] == ["accuracy", "only0", "only1"]
    assert cmp["versions"][0]["metrics"] == {"accuracy": 0.81, "only0": 1.0, "only1": None}
    assert cmp["versions"][1]["aliases"] == ["production"]
    r = await svc.call("alice", "GET", "models/vision/iris/compare?versions=" + ",".join(["1"] * 33))
    assert r.status_code == 422

    # another VC's person sees nothing, changes nothing; the list leaves it out
    for method, path, body in (
        ("GET", "models/vision/iris", None),
        ("GET", "models/vision/iris/versions/1", None),
        ("PUT", "models/vision/iris/aliases/mine", {"version": 1}),
        ("POST", "models/vision/iris/versions", {"files": []}),
        ("DELETE", "models/vision/iris", None),
    ):
        r = await svc.call("bob", method, path, json=body)
        assert r.status_code == 404 and r.json()["detail"] == "there is no model vision/iris", (method, r.text)
    assert (await svc.call("bob", "GET", "models")).json() == []
    assert [m["full_name"] for m in (await svc.call("alice", "GET", "models")).json()] == ["vision/iris"]

    # objects alice did not upload cannot be named
    r = await svc.call(
        "alice", "POST", "models/vision/iris/versions", json={"files": [{"path": "x", "size": 1, "hash": "ab" * 32}]}
    )
    assert r.status_code == 422 and "not in the store" in r.json()["detail"]

    r = await svc.call("alice", "DELETE", "models/vision/iris/versions/1")
    assert r.status_code == 204
    r = await svc.call("alice", "DELETE", "models/vision/iris")
    assert r.status_code == 204
    assert (await svc.call("alice", "GET", "datasets/vision/model-iris")).status_code == 404


async def test_refusals(svc):
    await make_model(svc)
    r = await svc.call("alice", "POST", "models", json={"vc": "vision", "name": "iris"})
    assert r.status_code == 409
    r = await svc.call("alice", "POST", "models", json={"vc": "nlp", "name": "x"})
    assert r.status_code == 404
    r = await svc.call("alice", "POST", "models", json={"vc": "vision", "name": "a" * 27})
    assert r.status_code == 422
    for body in ({}, {"files": [], "job": 1}, {"files": [], "path": "x"}, {"job": 1, "metrics": {"a": "high"}}):
        r = await svc.call("alice", "POST", "models/vision/iris/versions", json=body)
        assert r.status_code == 422, body
    r = await svc.call("alice", "GET", "models/vision/iris/versions/latest")
    assert r.status_code == 404 and r.json()["detail"] == "model vision/iris has no versions yet"
    # the model's backing dataset is not deleted from under it, even before its first version
    # (found by schemathesis' stateful phase: a 500 from the foreign key)
    r = await svc.call("alice", "DELETE", "datasets/vision/model-iris")
    assert r.status_code == 409 and "held by models (1)" in r.json()["detail"], r.text
    assert (await svc.call("alice", "GET", "models/vision/iris")).status_code == 200
