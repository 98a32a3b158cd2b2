"""A STAND-IN for the platform service's job and run routes (docs/architecture.md, "Jobs"), in
memory, for the lab side's tests of the HTTP boundary. It is not the service: tests/e2e runs the
same clients against the real one.

``conftest.StandIn`` hands every ``/jobs`` and ``/runs`` request to :func:`handle`. State lives
in :class:`JobState` (``platform_api.jobs``):

- ``jobs`` (id -> job model plus ``_logs`` {rank: bytes}, ``_pending`` chunks a follower receives
  one by one before the job ends as ``_end``), ``runs`` (id -> ledger record), ``received``
  (``(content type, parsed body, query)`` of every submit), ``tokens`` (job token -> job id);
- ``add(**fields)`` makes a job directly (``state="running"`` gets a ``backend_ref``);
- knob ``drop_after = n``: the next log stream is cut after n body bytes (no end chunk), as a
  dropped connection looks; ``autostart = (chunks, end)``: a queued job starts running when it is
  next looked at, writes ``chunks`` to its follower and ends as ``end``.

Logs stream with chunked transfer encoding (HTTP/1.1), like the service behind uvicorn.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import yaml

TERMINAL = {"succeeded", "failed", "cancelled", "preempted"}
RETRYABLE = {"failed", "cancelled", "preempted"}
REQUIRED = ("name", "vc", "command")


@dataclass
class JobState:
    jobs: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    received: list = field(default_factory=list)
    tokens: dict = field(default_factory=dict)
    drop_after: int | None = None
    autostart: tuple | None = None
    outputs_root: str = "/nonexistent"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, *, spec=None, user="alice", state="queued", logs=None, pending=(), end="succeeded", code=None, **fields
    ) -> dict:
        spec = {"name": "train", "vc": "vision", "command": ["python", "train.py"], **(spec or {})}
        with self.lock:
            job = new_job(self, spec, user, code or {})
            job.update(state=state, _logs=dict(logs or {}), _pending=list(pending), _end=end, **fields)
            if state != "queued":
                job["position"] = None
                job["reason"] = fields.get("reason", "")
                job["backend_ref"] = f"4242:1:/jobs/{job['id']}/attempt-1"
                job["attempts"] = max(job["attempts"], 1)
            return job


def new_job(state: JobState, spec: dict, user: str, code: dict) -> dict:
    job_id = max(state.jobs, default=0) + 1
    queued = [j for j in state.jobs.values() if j["state"] == "queued"]
    job = {
        "id": job_id,
        "name": spec["name"],
        "vc": spec["vc"],
        "user": user,
        "state": "queued",
        "reason": "waiting: VC vision: 8 of 8 cpu in use",
        "priority": 0,
        "position": len(queued) + 1,
        "spec": spec,
        "code": {k: code.get(k) for k in ("commit", "dirty_hash", "path")},
        "inputs": [],
        "created": "2026-01-02T03:04:05+00:00",
        "admitted": None,
        "started": None,
        "finished": None,
        "exit_code": None,
        "attempts": 0,
        "backend": "local",
        "backend_ref": None,
        "hosts": [],
        "ports": {},
        "devices": {},
        "_logs": {},
        "_pending": [],
        "_end": "succeeded",
    }
    state.jobs[job_id] = job
    return job


def public(job: dict, detail: bool = False, outputs_root: str = "") -> dict:
    out = {k: copy.deepcopy(v) for k, v in job.items() if not k.startswith("_")}
    out["runs"] = sorted(job.get("_runs", []))
    if detail:
        out["access"] = "local processes on testhost, process group 4242" if job["backend_ref"] else None
        out["ranks"] = sorted(job["_logs"]) if job["backend_ref"] else []
        out["outputs_path"] = job.get("_outputs") or f"{outputs_root}/jobs/{job['id']}/outputs"
    return out


def merge(base: dict, patch: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def parse_body(h) -> tuple[object, str, str | None]:
    """``(document, content type, error)`` like the service's ``_doc``."""
    length = int(h.headers.get("Content-Length") or 0)
    raw = h.rfile.read(length) if length else b""
    ctype = h.headers.get("Content-Type", "")
    try:
        if "json" in ctype and "yaml" not in ctype:
            return json.loads(raw or b"null"), ctype, None
        return yaml.safe_load(raw.decode()), ctype, None
    except (yaml.YAMLError, ValueError) as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return None, ctype, f"spec: not valid YAML or JSON{where}"


def check_spec(spec: dict) -> str | None:
    missing = [f"spec.{name}: Field required" for name in REQUIRED if name not in spec]
    return "; ".join(missing) or None


def stream_log(h, state: JobState, job: dict, rank: int, offset: int) -> None:
    """Chunked: what is there from ``offset``, then each pending chunk, then the job ends."""
    h.protocol_version = "HTTP/1.1"
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; charset=utf-8")
    h.send_header("Transfer-Encoding", "chunked")
    h.send_header("Connection", "close")
    h.end_headers()
    drop, state.drop_after = state.drop_after, None
    sent = 0

    def send(data: bytes) -> bool:
        nonlocal sent
        if drop is not None and sent + len(data) > drop:
            data = data[: drop - sent]
            h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if data else b"")
            h.wfile.flush()
            h.close_connection = True
            return False
        sent += len(data)
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()
        return True

    log = job["_logs"].get(rank, b"")
    if offset < len(log) and not send(log[offset:]):
        return
    while job["state"] not in TERMINAL:
        if job["_pending"]:
            time.sleep(0.05)
            chunk = job["_pending"].pop(0)
            job["_logs"][rank] = job["_logs"].get(rank, b"") + chunk
            if not send(chunk):
                return
        else:
            job.update(
                state=job["_end"],
                exit_code=0 if job["_end"] == "succeeded" else 1,
                reason="",
                finished="2026-01-02T03:05:00+00:00",
            )
    h.wfile.write(b"0\r\n\r\n")
    h.wfile.flush()
    h.close_connection = True


def handle(h, state: JobState, auth: str, route: str, users: dict, vcs: dict) -> None:
    query = {k: v[-1] for k, v in parse_qs(urlsplit(h.path).query).items()}
    token = re.sub(r"^(token|Bearer) ", "", auth)
    m = re.fullmatch(r"/jobs/(\d+)/metrics", route)
    if m and h.command == "POST":
        doc, _ctype, _err = parse_body(h)
        job = state.jobs.get(int(m.group(1)))
        if job is None or state.tokens.get(token) != job["id"]:
            return h.reply(401, {"detail": f"a valid token of job {m.group(1)} is required"})
        run = state.runs.setdefault(job["id"], {"run": job["id"], "metrics": {}})
        run["metrics"].update(doc)
        return h.reply(200, {"run": run["run"], "metrics": run["metrics"]})
    user = users.get(token)
    if user is None:
        return h.reply(401, {"detail": "authentication required: send a JupyterHub token"})
    member_of = {vc["name"] for vc in vcs.values() if user["admin"] or set(vc["groups"]) & set(user["groups"])}

    def visible(job_id: int) -> dict | None:
        job = state.jobs.get(job_id)
        return job if job is not None and job["vc"] in member_of else None

    def submit(spec: dict, code: dict) -> None:
        if spec.get("vc") not in vcs:
            return h.reply(404, {"detail": f"there is no VC {spec.get('vc')}"})
        if spec["vc"] not in member_of:
            return h.reply(403, {"detail": f"{user['name']} is not a member of VC {spec['vc']}"})
        with state.lock:
            job = new_job(state, spec, user["name"], code)
        return h.reply(201, public(job) | {"notes": []})

    if route == "/jobs" and h.command == "POST":
        doc, ctype, error = parse_body(h)
        state.received.append((ctype, copy.deepcopy(doc), query))
        if error:
            return h.reply(422, {"detail": error})
        if query.get("from") == "openpai":
            vc = query.get("vc") or (doc.get("defaults") or {}).get("virtualCluster")
            spec = {
                "name": doc["name"].lower().replace("_", "-"),
                "vc": vc,
                "command": "\n".join(doc["taskRoles"]["main"]["commands"]),
            }
            job_reply = submit(spec, {})
            return job_reply
        if not isinstance(doc, dict):
            return h.reply(422, {"detail": "spec: must be a map of fields"})
        code = doc.pop("code", None) or {}
        if query.get("vc"):
            doc["vc"] = query["vc"]
        problem = check_spec(doc)
        if problem:
            return h.reply(422, {"detail": problem})
        return submit(doc, code)
    if route == "/jobs" and h.command == "GET":
        jobs = [
            public(j)
            for j in sorted(state.jobs.values(), key=lambda j: -j["id"])
            if j["vc"] in member_of and all(j[k] == query[k] for k in ("vc", "state", "user") if k in query)
        ]
        return h.reply(200, jobs)
    m = re.fullmatch(r"/(jobs|runs)/(\d+)(?:/([a-z]+))?", route)
    if not m:
        return h.reply(404, {"detail": "Not Found"})
    kind, number, action = m.group(1), int(m.group(2)), m.group(3)
    if kind == "runs":
        run = state.runs.get(number)
        if run is None or visible(run["job"]) is None:
            return h.reply(404, {"detail": f"there is no run {number}"})
        if action is None and h.command == "GET":
            return h.reply(200, run)
        if action == "rerun" and h.command == "POST":
            return submit(copy.deepcopy(run["spec"]), dict(run.get("code") or {}))
        return h.reply(404, {"detail": "Not Found"})
    job = visible(number)
    if job is None:
        return h.reply(404, {"detail": f"there is no job {number}"})
    if action is None and h.command == "GET":
        if state.autostart and job["state"] == "queued":
            chunks, end = state.autostart
            job.update(
                state="running",
                position=None,
                reason="",
                attempts=job["attempts"] + 1,
                backend_ref=f"4242:1:/jobs/{job['id']}/attempt-1",
                started="2026-01-02T03:04:06+00:00",
                _pending=list(chunks),
                _end=end,
                _logs={0: b""},
            )
        return h.reply(200, public(job, detail=True, outputs_root=state.outputs_root))
    if action == "logs" and h.command == "GET":
        rank, offset = int(query.get("rank", 0)), int(query.get("offset", 0))
        if query.get("follow") in ("1", "true"):
            return stream_log(h, state, job, rank, offset)
        data = job["_logs"].get(rank, b"")[offset:]
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; charset=utf-8")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
        return None
    owner = user["admin"] or user["name"] == job["user"]
    if action == "cancel" and h.command == "POST":
        if not owner:
            return h.reply(403, {"detail": f"{user['name']} may not cancel job {number} of {job['user']}"})
        if job["state"] in TERMINAL:
            return h.reply(409, {"detail": f"job {number} is already {job['state']}"})
        job["state"] = "cancelled" if job["state"] == "queued" else job["state"]
        job["reason"] = "cancelled" if job["state"] == "cancelled" else "cancelling"
        return h.reply(202, public(job, detail=True, outputs_root=state.outputs_root))
    if action == "retry" and h.command == "POST":
        if not owner:
            return h.reply(403, {"detail": f"{user['name']} may not retry job {number} of {job['user']}"})
        if job["state"] not in RETRYABLE:
            return h.reply(
                409,
                {"detail": f"job {number} is {job['state']}; only failed, cancelled or preempted jobs can be retried"},
            )
        job.update(state="queued", reason="retry requested", exit_code=None, backend_ref=None)
        return h.reply(200, public(job))
    if action == "clone" and h.command == "POST":
        doc, _ctype, _error = parse_body(h)
        state.received.append(("clone", doc, query))
        spec = merge(job["spec"], (doc or {}).get("patch") or {})
        code = spec.pop("code", job["code"])
        return submit(spec, code)
    return h.reply(404, {"detail": "Not Found"})
