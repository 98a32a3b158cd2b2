"""The Open Inference Protocol (KServe V2) conformance suite, built from the protocol's own
OpenAPI file (``tests/fixtures/open_inference_rest.yaml``, vendored from
kserve/open-inference-protocol; its README says from which commit).

Real parts throughout: a real ``yitong-service`` process against the test hub, and behind its
endpoint route a real MLServer 1.7.1 (``make mlserver``) serving ``tests/fixtures/v2_echo``, a
custom Python runtime that answers every input tensor with itself, so each datatype and several
inputs in one request travel through the platform and back. Every response body is validated
against the spec's schemas (OpenAPI 3.0 schema objects, by ``openapi-schema-validator``);
the health answers, which the YAML leaves without a body, against the objects of the spec's
text (inference_rest.md). Then two clients nobody here wrote send FP32, INT64, BOOL and BYTES
tensors and several inputs through the platform: tritonclient's HTTP client (``binary_data=False``,
and its default ``binary_data=True``, which the platform rewrites into JSON for MLServer)
in this process, kserve 0.21's REST client in its own environment (``make kserve``,
``.venv-kserve``) in a subprocess. Last, per-endpoint keys that an admin issues for outside
callers. Two endpoints are deployed once for the module: ``echo`` (VC vision, alice's) and
``nlp-echo`` (VC nlp, bob's).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from helpers import yt_as
from openapi_schema_validator import OAS30Validator

from tests.services.jobs.test_jobs_process import Proc

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
MLSERVER_PY = ROOT / ".venv-mlserver" / "bin" / "python"
KSERVE_PY = ROOT / ".venv-kserve" / "bin" / "python"
SPEC = yaml.safe_load((FIXTURES / "open_inference_rest.yaml").read_text())
ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
# inference_rest.md's $live_server_response, $ready_server_response (its text writes "live" there;
# KServe's server and client say "ready") and $ready_model_response
HEALTH = {
    "health/live": {"type": "object", "properties": {"live": {"type": "boolean"}}, "required": ["live"]},
    "health/ready": {"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]},
    "ready": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "ready": {"type": "boolean"}},
        "required": ["name", "ready"],
    },
}

pytestmark = pytest.mark.skipif(not MLSERVER_PY.exists(), reason="run `make mlserver` (MLServer's own environment)")


# -- the spec ------------------------------------------------------------------------------------


def _pattern(template: str) -> re.Pattern[str]:
    """A path of the spec as a regex over the path after ``/v2``: ``${NAME}`` is one segment, and
    ``/versions/${MODEL_VERSION}`` is optional (inference_rest.md: "path contents in [] are
    optional")."""
    rest = template.removeprefix("/v2")
    rest = rest.replace("/versions/${MODEL_VERSION}", "(?:/versions/[^/]+)?")
    rest = re.sub(r"\$\{[A-Z_]+\}", "[^/]+", rest)
    return re.compile("^" + rest.rstrip("/") + "/?$")


OPERATIONS = [(_pattern(path), ops) for path, ops in SPEC["paths"].items()]


def validate(schema: dict, body: object) -> None:
    """``body`` against an OpenAPI 3.0 schema object, ``$ref`` resolved in the spec."""
    OAS30Validator({**schema, "components": SPEC["components"]}).validate(body)


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def operation(method: str, rest: str) -> dict:
    found = [ops[method.lower()] for pattern, ops in OPERATIONS if pattern.match(rest) and method.lower() in ops]
    assert len(found) == 1, f"{method} /v2{rest} matches {len(found)} operations of the spec"
    return found[0]


def conforms(method: str, rest: str, r: httpx.Response) -> object:
    """The response checked against the spec's operation for ``method /v2<rest>``: its status
    (2xx, or a 4xx for an error), its JSON body against the operation's schema for that status,
    or the protocol's error object for an error the YAML does not list."""
    op = operation(method, rest)
    body = r.json()
    responses = op["responses"]
    if r.status_code == 200:
        content = responses["200"].get("content")
        if content:
            validate(content["application/json"]["schema"], body)
        else:  # a health answer: the object of the spec's text
            key = "ready" if rest.endswith("/ready") and rest.startswith("/models") else rest.lstrip("/")
            validate(HEALTH[key], body)
        return body
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    listed = responses.get(str(r.status_code)) or responses.get("400")
    if listed and listed.get("content"):
        validate(listed["content"]["application/json"]["schema"], body)
    validate(ERROR, body)  # the text: "The HTTP body must contain the $..._error_response object"
    return body


def test_the_vendored_spec_is_a_valid_openapi_document():
    from openapi_spec_validator import validate as validate_spec

    validate_spec(SPEC)
    assert {p for p, _ in OPERATIONS} and len(OPERATIONS) == 6
    assert operation("POST", "/models/m/infer") is operation("POST", "/models/m/versions/3/infer")


# -- the deployment ------------------------------------------------------------------------------


def _register_echo(proc: Proc, who: str, vc: str, tmp: Path) -> None:
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    src = tmp / f"echo-{vc}"
    src.mkdir()
    shutil.copy(FIXTURES / "v2_echo" / "model.py", src / "model.py")
    with Client(proc.base.rstrip("/"), proc.hub.tokens[who]) as c:
        v = Models(c).register(f"{vc}/echo", src, framework="python", format="python", progress=None)
    assert v["number"] == 1


def _deploy(proc: Proc, who: str, name: str, model: str) -> None:
    r = proc.call(who, "POST", "endpoints", json={"name": name, "model": model, "profile": "cpu-small"})
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def served(hub, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("v2")
    proc = Proc(hub, f"sqlite:///{tmp / 'yitong.sqlite'}", tmp)
    proc.start()
    try:
        _register_echo(proc, "alice", "vision", tmp)
        _register_echo(proc, "bob", "nlp", tmp)
        _deploy(proc, "alice", "echo", "vision/echo@1")
        _deploy(proc, "bob", "nlp-echo", "nlp/echo@1")
        deadline = time.monotonic() + 90
        for who, name in (("alice", "echo"), ("bob", "nlp-echo")):
            while (e := proc.call(who, "GET", f"endpoints/{name}").json())["state"] != "ready":
                log = tmp / "data" / "endpoints" / name / "mlserver.log"
                assert time.monotonic() < deadline, (e, log.read_text()[-3000:] if log.exists() else "")
                time.sleep(0.2)
        yield proc
    finally:
        for e in proc.call("admin", "GET", "endpoints").json():
            proc.call("admin", "DELETE", f"endpoints/{e['name']}")
        proc.stop()


def v2(proc: Proc, method: str, rest: str, who: str | None = "alice", endpoint: str = "echo", **kw) -> httpx.Response:
    token = proc.hub.tokens.get(who, who) if who else None
    headers = ({"Authorization": f"Bearer {token}"} if token else {}) | kw.pop("headers", {})
    return httpx.request(method, f"{proc.base}endpoints/{endpoint}/v2{rest}", headers=headers, timeout=30, **kw)


# -- health and metadata -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rest",
    [
        "/",
        "/health/live",
        "/health/ready",
        "/models/echo",
        "/models/echo/ready",
        "/models/echo/versions/v1",
        "/models/echo/versions/v1/ready",
    ],
)
def test_health_and_metadata_conform(served, rest):
    r = v2(served, "GET", rest)
    assert r.status_code == 200, r.text
    body = conforms("GET", rest, r)
    if rest == "/":
        assert body["name"] == "mlserver" and body["version"]
    elif rest.startswith("/models/echo") and not rest.endswith("ready"):
        assert body["name"] == "echo" and body["platform"] == ""
    elif rest.endswith("ready") and rest.startswith("/models"):
        assert body == {"name": "echo", "ready": True}
    else:
        assert body == {rest.split("/")[-1]: True}


def test_server_metadata_without_the_slash(served):
    r = v2(served, "GET", "")
    assert r.status_code == 200 and conforms("GET", "/", r)["name"] == "mlserver"


# -- infer: every datatype, several inputs -------------------------------------------------------

TENSORS = {
    "FP32": {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [1.5, -2.25, 0.0, 3.0, 4.0, 0.5]},
    "INT64": {"name": "n", "shape": [3], "datatype": "INT64", "data": [1, -2, 2**40]},
    "BOOL": {"name": "b", "shape": [2, 2], "datatype": "BOOL", "data": [True, False, False, True]},
    "BYTES": {"name": "s", "shape": [2], "datatype": "BYTES", "data": ["hello", "\u4f9d\u77b3"]},
    "nested FP32": {"name": "m", "shape": [2, 2], "datatype": "FP32", "data": [[1.0, 2.0], [3.0, 4.0]]},
}
BIG = {"name": "big", "shape": [5000, 4], "datatype": "FP32", "data": [i / 4 for i in range(20000)]}  # > 64 KiB
CASES = {k: [v] for k, v in TENSORS.items()} | {"multiple inputs": list(TENSORS.values()), "large FP32": [BIG]}


@pytest.mark.parametrize("rest", ["/models/echo/infer", "/models/echo/versions/v1/infer"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_infer_conforms(served, case, rest):
    request = {"id": f"req-{case}", "inputs": CASES[case], "outputs": [{"name": t["name"]} for t in CASES[case]]}
    validate(ref("inference_request"), request)
    r = v2(served, "POST", rest, json=request)
    assert r.status_code == 200, r.text
    body = conforms("POST", rest, r)
    assert (body["model_name"], body["model_version"], body["id"]) == ("echo", "v1", f"req-{case}")
    assert [{k: o[k] for k in ("name", "shape", "datatype", "data")} for o in body["outputs"]] == CASES[case]


# -- error shapes: a 4xx and the spec's error object ---------------------------------------------

FP32 = {"name": "x", "shape": [2], "datatype": "FP32", "data": [1.0, 2.0]}
ERRORS = [
    # case, method, endpoint, rest, body (bytes: sent as they are), status, sentence
    ("unknown model", "POST", "echo", "/models/nope/infer", {"inputs": [FP32]}, 404, "Model nope not found"),
    ("unknown model metadata", "GET", "echo", "/models/nope", None, 404, "Model nope not found"),
    ("unknown model ready", "GET", "echo", "/models/nope/ready", None, 404, "Model nope not found"),
    ("unknown version", "POST", "echo", "/models/echo/versions/v9/infer", {"inputs": [FP32]}, 404, "version v9"),
    (
        "bad datatype",
        "POST",
        "echo",
        "/models/echo/infer",
        {"inputs": [FP32 | {"datatype": "FP99"}]},
        400,
        "endpoint echo: input 'x': datatype 'FP99' is not one of BOOL, UINT8,",
    ),
    (
        "shape mismatch",
        "POST",
        "echo",
        "/models/echo/infer",
        {"inputs": [FP32 | {"shape": [2, 2]}]},
        400,
        "endpoint echo: input 'x' has 2 elements; its shape [2, 2] holds 4",
    ),
    (
        "data of another type",
        "POST",
        "echo",
        "/models/echo/infer",
        {"inputs": [{"name": "n", "shape": [2], "datatype": "INT64", "data": [1, 2.5]}]},
        400,
        "endpoint echo: input 'n': INT64 data must be integers, not 2.5",
    ),
    (
        "malformed JSON",
        "POST",
        "echo",
        "/models/echo/infer",
        b'{"inputs": [{"name": "x", "shape": [2]',
        400,
        "endpoint echo: the request is not JSON: ",
    ),
    (
        "large shape mismatch",
        "POST",
        "echo",
        "/models/echo/infer",
        {"inputs": [BIG | {"data": BIG["data"][:-1]}]},
        400,
        "endpoint echo: input 'big' has 19999 elements; its shape [5000, 4] holds 20000",
    ),
    (
        "no inputs",
        "POST",
        "echo",
        "/models/echo/infer",
        {"outputs": []},
        400,
        "endpoint echo: the request has no inputs",
    ),
    # the platform lets this pass; MLServer refuses it with FastAPI's {"detail": [...]}, which the
    # platform answers in the protocol's shape
    (
        "parameters not an object",
        "POST",
        "echo",
        "/models/echo/infer",
        {"inputs": [FP32], "parameters": 5},
        422,
        "endpoint echo: the request does not fit the protocol: parameters: ",
    ),
    ("unknown endpoint", "GET", "nope", "/health/ready", None, 404, "there is no endpoint nope"),
    ("another VC's endpoint", "GET", "nlp-echo", "/health/ready", None, 404, "there is no endpoint nlp-echo"),
]


@pytest.mark.parametrize(
    "method,endpoint,rest,body,status,sentence", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_error_shapes(served, method, endpoint, rest, body, status, sentence):
    kw = {"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes) else {}
    if isinstance(body, dict):
        kw = {"json": body}
    r = v2(served, method, rest, endpoint=endpoint, **kw)
    assert r.status_code == status, r.text
    error = conforms(method, rest, r)["error"]
    assert error.startswith(sentence) if sentence.endswith(("not JSON: ", ": ")) else sentence in error, error


def test_anonymous_and_unknown_tokens_get_the_error_object(served):
    for who in (None, "not-a-token", "yte_not-a-key"):
        r = v2(served, "GET", "/health/ready", who=who)
        assert r.status_code == 401 and set(r.json()) == {"error"}, r.text


# -- two clients nobody here wrote ---------------------------------------------------------------

NUMPY = {
    "FP32": np.array([[1.5, -2.25, 0.0], [3.0, 4.0, 1e-3]], dtype=np.float32),
    "INT64": np.array([1, -2, 2**40], dtype=np.int64),
    "BOOL": np.array([[True, False], [False, True]]),
    "BYTES": np.array([b"hello", "\u4f9d\u77b3".encode()], dtype=np.object_),
}


def test_tritonclient_http(served):
    import tritonclient.http as th
    from tritonclient.utils import InferenceServerException

    url = f"127.0.0.1:{served.port}/services/yitong/api/v1/endpoints/echo"
    auth = {"Authorization": f"token {served.hub.tokens['alice']}"}
    client = th.InferenceServerClient(url=url)
    assert client.is_server_live(headers=auth) and client.is_server_ready(headers=auth)
    assert client.is_model_ready("echo", headers=auth) and client.is_model_ready("echo", "v1", headers=auth)
    assert client.get_server_metadata(headers=auth)["name"] == "mlserver"
    assert client.get_model_metadata("echo", headers=auth)["name"] == "echo"

    def infer(names: list[str], model: str = "echo") -> dict[str, np.ndarray]:
        inputs = []
        for n in names:
            x = th.InferInput(n.lower(), list(NUMPY[n].shape), n)
            x.set_data_from_numpy(NUMPY[n], binary_data=False)
            inputs.append(x)
        outputs = [th.InferRequestedOutput(n.lower(), binary_data=False) for n in names]
        result = client.infer(model, inputs, outputs=outputs, headers=auth)
        return {n: result.as_numpy(n.lower()) for n in names}

    for datatype in NUMPY:
        got = infer([datatype])[datatype]
        assert got.shape == NUMPY[datatype].shape, datatype
        if datatype == "BYTES":  # JSON strings come back as str or bytes elements
            assert [v.encode() if isinstance(v, str) else v for v in got.ravel()] == list(NUMPY["BYTES"])
        else:
            assert got.dtype == NUMPY[datatype].dtype and np.array_equal(got, NUMPY[datatype]), datatype
    both = infer(["FP32", "INT64", "BOOL", "BYTES"])
    assert np.array_equal(both["INT64"], NUMPY["INT64"]) and np.array_equal(both["BOOL"], NUMPY["BOOL"])
    with pytest.raises(InferenceServerException) as unknown:
        infer(["FP32"], model="nope")
    assert unknown.value.status() == "404" and "Model nope not found" in str(unknown.value)
    x = th.InferInput("x", [2, 2], "FP32")
    x._data = [1.0, 2.0, 3.0]  # tritonclient checks shapes itself: put the wrong data in past it
    with pytest.raises(InferenceServerException) as wrong:
        client.infer("echo", [x], headers=auth)
    assert wrong.value.status() == "400" and "has 3 elements; its shape [2, 2] holds 4" in str(wrong.value)


def test_tritonclient_binary_tensors(served):
    """The binary tensor extension (tritonclient's default, ``binary_data=True``): MLServer 1.7.1
    does not read it over REST, so the platform rewrites the request into the JSON one it means
    (models/v2binary.py) and the answer, JSON, reads back in the client; a binary part that does
    not add up is a 400 in the protocol's shape."""
    import tritonclient.http as th

    client = th.InferenceServerClient(url=f"127.0.0.1:{served.port}/services/yitong/api/v1/endpoints/echo")
    auth = {"Authorization": f"token {served.hub.tokens['alice']}"}
    x = th.InferInput("x", list(NUMPY["FP32"].shape), "FP32")
    x.set_data_from_numpy(NUMPY["FP32"], binary_data=True)
    words = th.InferInput("w", [2], "BYTES")
    words.set_data_from_numpy(np.array([b"a b", "\u00fc".encode()], dtype=object), binary_data=True)
    answer = client.infer("echo", [x, words], headers=auth).get_response()
    data = {o["name"]: o["data"] for o in answer["outputs"]}
    assert np.array(data["x"]).ravel().tolist() == NUMPY["FP32"].ravel().tolist()
    assert data["w"] == ["a b", "\u00fc"]
    header = json.dumps({"inputs": [FP32 | {"data": [1.0]}]}).encode()  # the platform checks the header
    r = v2(
        served,
        "POST",
        "/models/echo/infer",
        content=header,
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert (
        r.status_code == 400
        and "input 'x' has 1 elements; its shape [2] holds 2" in conforms("POST", "/models/echo/infer", r)["error"]
    )
    r = v2(
        served,
        "POST",
        "/models/echo/infer",
        content=header + b"\0" * 8,
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert r.status_code == 400 and "8 bytes after the last binary input belong to no input" in r.json()["error"]
    r = v2(served, "POST", "/models/echo/infer", content=header, headers={"Inference-Header-Content-Length": "999"})
    assert r.status_code == 400 and "is not a length within the body" in r.json()["error"]


@pytest.mark.skipif(not KSERVE_PY.exists(), reason="run `make kserve` (the kserve SDK's own environment)")
def test_kserve_rest_client(served):
    base = f"{served.base}endpoints/echo"
    done = subprocess.run(
        [KSERVE_PY, FIXTURES / "v2_clients" / "kserve_client.py", base, served.hub.tokens["alice"], "echo"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert (out["live"], out["ready"], out["model_ready"]) == (True, True, True)
    datatypes = {"fp32": "FP32", "int64": "INT64", "bool": "BOOL", "bytes": "BYTES"}
    for name, datatype in datatypes.items():
        assert out["got"][name] == out["sent"][name] | {"datatype": datatype}, name
        assert out["got"]["all"][name] == out["got"][name], name
    assert out["sent"]["int64"]["data"] == [1, -2, 2**40] and out["sent"]["bytes"]["data"][1] == "\u4f9d\u77b3"
    assert out["unknown_model"]["status"] == 404 and "Model nope not found" in out["unknown_model"]["message"]
    assert out["bad_shape"]["status"] == 400
    assert "input 'x' has 3 elements; its shape [2, 2] holds 4" in out["bad_shape"]["message"]


# -- keys for outside callers --------------------------------------------------------------------


def _audit(proc: Proc, action: str) -> list[dict]:
    return proc.call("admin", "GET", "audit", params={"action": action}).json()["items"]


def docs_key_commands() -> list[str]:
    """The commands of docs/models.md's "Keys for outside callers" block."""
    section = (ROOT / "docs" / "models.md").read_text().split("### Keys for outside callers", 1)[1]
    block = section.split("```\n", 2)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("yt ")]


def test_endpoint_keys(served, monkeypatch, capsys):
    from yitong_lab.cli.grammar import run

    # admins only: a member of the VC, another VC's person, anonymous
    for who in ("alice", "bob"):
        r = served.call(who, "POST", "endpoints/echo/keys", json={"note": "x"})
        assert (r.status_code, r.json()["detail"]) == (403, "only admins may issue endpoint keys")
        assert served.call(who, "GET", "endpoints/echo/keys").status_code == 403
    assert httpx.post(served.base + "endpoints/echo/keys", json={}).status_code == 401
    r = served.call("admin", "POST", "endpoints/nope/keys", json={})
    assert (r.status_code, r.json()["detail"]) == (404, "there is no endpoint nope")

    # docs/models.md's commands, verbatim, as an admin
    create, ls, revoke = docs_key_commands()
    yt_as(monkeypatch, served.base, served.hub.tokens["admin"])
    assert run(shlex.split(create)[1:]) == 0
    first, key = capsys.readouterr().out.splitlines()
    assert first == "key 1 for endpoint echo (shown once, keep it safe):"
    assert key.startswith("yte_") and len(key) == 47
    assert run(shlex.split(ls)[1:]) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == [
        "1",
        f"{key[:12]}...",
        "partner",
        "A",
        "admin",
        "in",
        "use",
    ]
    [made] = served.call("admin", "GET", "endpoints/echo/keys").json()
    assert (made["id"], made["prefix"], made["note"], made["revoked"]) == (1, key[:12], "partner A", None)
    assert key not in json.dumps(made)
    [entry] = _audit(served, "endpoint.key.create")
    assert (entry["actor"], entry["target"], entry["detail"]["note"]) == ("admin", "endpoint echo", "partner A")
    # stored hashed: the database holds the SHA-256, never the key
    db = sqlite3.connect(served.settings.parent / "yitong.sqlite")
    [(digest,)] = db.execute("select digest from endpoint_keys").fetchall()
    db.close()
    assert digest == hashlib.sha256(key.encode()).hexdigest()
    assert key.encode() not in (served.settings.parent / "yitong.sqlite").read_bytes()

    # the key works for its endpoint's V2 routes, with a client nobody here wrote
    import tritonclient.http as th

    client = th.InferenceServerClient(url=f"127.0.0.1:{served.port}/services/yitong/api/v1/endpoints/echo")
    x = th.InferInput("x", [2], "FP32")
    x.set_data_from_numpy(np.array([1.0, 2.0], dtype=np.float32), binary_data=False)
    got = client.infer("echo", [x], headers={"Authorization": f"Bearer {key}"}).as_numpy("x")
    assert got.tolist() == [1.0, 2.0]
    r = v2(served, "GET", "/models/echo", who=key)
    assert r.status_code == 200 and conforms("GET", "/models/echo", r)["name"] == "echo"
    # ... and nowhere else: another endpoint (another VC's) answers as an unknown one does
    unknown = v2(served, "GET", "/health/ready", who=key, endpoint="nope")
    other = v2(served, "GET", "/health/ready", who=key, endpoint="nlp-echo")
    assert (other.status_code, other.json()) == (404, {"error": "there is no endpoint nlp-echo"})
    assert (unknown.status_code, unknown.json()) == (404, {"error": "there is no endpoint nope"})
    for path in ("endpoints/echo", "endpoints", "endpoints/echo/keys"):  # not a hub token
        assert httpx.get(served.base + path, headers={"Authorization": f"Bearer {key}"}).status_code == 401
    # a key of nlp-echo (the SDK's call) does not open echo either
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Endpoints

    with Client(served.base.rstrip("/"), served.hub.tokens["admin"]) as c:
        nlp_key = Endpoints(c).create_key("nlp-echo", note="nlp partner")["key"]
        assert [k["note"] for k in Endpoints(c).keys("nlp-echo")] == ["nlp partner"]
    assert v2(served, "GET", "/health/ready", who=nlp_key).json() == {"error": "there is no endpoint echo"}
    assert v2(served, "GET", "/health/ready", who=nlp_key, endpoint="nlp-echo").status_code == 200

    # revoked (the docs' command): refused at once, still listed; revoking again changes nothing
    assert run(shlex.split(revoke)[1:]) == 0
    assert capsys.readouterr().out == "revoked key 1 of endpoint echo\n"
    r = v2(served, "POST", "/models/echo/infer", who=key, json={"inputs": [FP32]})
    assert r.status_code == 401 and r.json() == {"error": "this endpoint key is not valid (revoked, or never issued)"}
    [k] = served.call("admin", "GET", "endpoints/echo/keys").json()
    assert k["revoked"] is not None
    assert served.call("admin", "DELETE", "endpoints/echo/keys/1").status_code == 204
    assert served.call("alice", "DELETE", "endpoints/echo/keys/1").status_code == 403
    r = served.call("admin", "DELETE", "endpoints/nlp-echo/keys/1")  # echo's key, not nlp-echo's
    assert r.status_code == 404 and r.json()["detail"] == "endpoint nlp-echo has no key 1"
    assert len(_audit(served, "endpoint.key.revoke")) == 2
    assert run(["deploy", "key", "ls", "echo"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[-1] == "revoked"
    monkeypatch.setenv("YT_TOKEN", served.hub.tokens["alice"])
    assert run(["deploy", "key", "ls", "echo"]) == 1
    assert capsys.readouterr().err == "yt: only admins may list endpoint keys\n"


def test_deleting_an_endpoint_deletes_its_keys(served):
    key = served.call("admin", "POST", "endpoints/nlp-echo/keys", json={}).json()["key"]
    assert v2(served, "GET", "/health/ready", who=key, endpoint="nlp-echo").status_code == 200
    db = sqlite3.connect(served.settings.parent / "yitong.sqlite")
    [(nlp_id,)] = db.execute("select id from endpoints where name = 'nlp-echo'").fetchall()
    others = db.execute("select count(*) from endpoint_keys where endpoint_id != ?", (nlp_id,)).fetchone()
    assert served.call("bob", "DELETE", "endpoints/nlp-echo").status_code == 204
    assert db.execute("select count(*) from endpoint_keys where endpoint_id = ?", (nlp_id,)).fetchone() == (0,)
    assert db.execute("select count(*) from endpoint_keys").fetchone() == others  # echo's stay
    db.close()
    assert v2(served, "GET", "/health/ready", who=key, endpoint="nlp-echo").status_code == 401
