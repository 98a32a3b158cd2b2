"""The OpenAPI document says what the API really accepts and answers.

FastAPI's own document is patched in three places: errors are ``{"detail": "<sentence>"}`` (not
FastAPI's list of validation errors), the job submit body is the JobSpec schema (JSON) or a YAML
string, generated from the same pydantic model that validates it, and ``links`` join a create to
the reads and changes of what it created (schemathesis's stateful phase follows them).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string", "description": "what was refused and why, in a sentence"}},
    "required": ["detail"],
    "title": "Error",
}

# (method, path after api/v1, status) -> {link name: (method, target path, {parameter: expression})}
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {}


def _link(source: tuple[str, str, str], link: str, method: str, path: str, **params: str) -> None:
    LINKS.setdefault(source, {})[link] = (method, path, params)


for _m, _name in (("get", "GetVC"), ("patch", "PatchVC"), ("delete", "DeleteVC")):
    _link(("post", "/vcs", "201"), _name, _m, "/vcs/{vc}", vc="$response.body#/name")
for _m, _name in (("get", "GetProfile"), ("patch", "PatchProfile"), ("delete", "DeleteProfile")):
    _link(("post", "/profiles", "201"), _name, _m, "/profiles/{name}", name="$response.body#/name")
for _status in ("200", "201"):
    _link(
        ("post", "/allocations", _status),
        "ReleaseAllocation",
        "delete",
        "/allocations/{allocation_id}",
        allocation_id="$response.body#/id",
    )
_DATASET = {"vc": "$response.body#/vc", "name": "$response.body#/name"}
for _m, _path, _name in (
    ("get", "/datasets/{vc}/{name}", "GetDataset"),
    ("patch", "/datasets/{vc}/{name}", "PatchDataset"),
    ("delete", "/datasets/{vc}/{name}", "DeleteDataset"),
    ("post", "/datasets/{vc}/{name}/versions", "CommitVersion"),
    ("get", "/datasets/{vc}/{name}/versions", "ListVersions"),
):
    _link(("post", "/datasets", "201"), _name, _m, _path, **_DATASET)
_VERSION = {"vc": "$request.path.vc", "name": "$request.path.name", "ref": "$response.body#/number"}
for _status in ("200", "201"):
    for _m, _path, _name in (
        ("get", "/datasets/{vc}/{name}/versions/{ref}", "GetVersion"),
        ("get", "/datasets/{vc}/{name}/versions/{ref}/manifest", "GetManifest"),
        ("post", "/datasets/{vc}/{name}/versions/{ref}/materialize", "Materialize"),
        ("delete", "/datasets/{vc}/{name}/versions/{ref}", "DeleteVersion"),
    ):
        _link(("post", "/datasets/{vc}/{name}/versions", _status), _name, _m, _path, **_VERSION)
for _source in (
    ("post", "/jobs", "201"),
    ("post", "/jobs/{job_id}/clone", "201"),
    ("post", "/runs/{run_id}/rerun", "201"),
):
    for _m, _path, _name in (
        ("get", "/jobs/{job_id}", "GetJob"),
        ("post", "/jobs/{job_id}/cancel", "CancelJob"),
        ("post", "/jobs/{job_id}/retry", "RetryJob"),
        ("post", "/jobs/{job_id}/clone", "CloneJob"),
        ("get", "/jobs/{job_id}/logs", "JobLogs"),
    ):
        _link(_source, _name, _m, _path, job_id="$response.body#/id")
_link(("get", "/jobs/{job_id}", "200"), "GetRun", "get", "/runs/{run_id}", run_id="$response.body#/runs/0")


def _job_submit_body(components: dict[str, Any]) -> dict[str, Any]:
    from ..jobs.records import Submission

    schema = Submission.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(schema.pop("$defs", {}))
    components["JobSubmission"] = schema
    return {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/JobSubmission"}},
            "application/yaml": {"schema": {"type": "string", "description": "the same document in YAML"}},
        },
    }


def build(app: FastAPI, api: str) -> dict[str, Any]:
    """FastAPI's document with the patches above; ``api`` is the path prefix of the REST routes."""
    doc = FastAPI.openapi(app)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    components.pop("ValidationError", None)
    components["HTTPValidationError"] = ERROR
    components["Error"] = ERROR
    paths = doc.get("paths", {})
    ids = {(m, p.removeprefix(api)): op.get("operationId") for p, ops in paths.items() for m, op in ops.items()}
    for path, ops in paths.items():
        for method, op in ops.items():
            responses = op.setdefault("responses", {})
            responses.setdefault(
                "4XX",
                {
                    "description": "refused, with a sentence why",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                },
            )
            short = path.removeprefix(api)
            if (method, short) == ("post", "/jobs"):
                op["requestBody"] = _job_submit_body(components)
            for (m, source, status), links in LINKS.items():
                if (m, source) != (method, short) or status not in responses:
                    continue
                responses[status]["links"] = {
                    name: {"operationId": ids[(target_method, target)], "parameters": params}
                    for name, (target_method, target, params) in links.items()
                    if (target_method, target) in ids
                }
    return doc


def install(app: FastAPI, api: str) -> None:
    built: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        if not built:
            built.append(build(app, api))
        return built[0]

    app.openapi = openapi  # type: ignore[method-assign]
