"""The jobs part of the SDK: the job and run routes as :class:`~yitong_lab.client.Client` methods.

:class:`JobCalls` is mixed into ``Client``; only the standard library is imported here (a kernel
loads the client). A spec is a dict (sent as JSON) or YAML text (sent as ``application/yaml``,
so the service's YAML errors come back as they are).

>>> from yitong_lab.client import Client
>>> job = Client().submit_job(open("train.yaml").read(), directory=".")   # doctest: +SKIP
>>> for chunk in Client().follow_log(job["id"]):                            # doctest: +SKIP
...     print(chunk, end="")
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from yitong_lab.api_types import (  # generated from the OpenAPI document
    JobDetail,
    JobOut,
    JobPreview,
    JobSubmitted,
    RunOut,
)
from yitong_lab.calls import ClientCalls
from yitong_lab.errors import YitongError

#: the states a job no longer leaves by itself (``retry`` may queue it again)
TERMINAL = ("succeeded", "failed", "cancelled", "preempted")


#: the answers' types are generated from the OpenAPI document (docs/generate.py): ``Job`` is a
#: job as listed, ``Run`` a run's ledger record; the detail and a submit add a few fields
Job = JobOut
Run = RunOut


def submission(spec: dict[str, Any] | str | bytes, code: dict[str, Any] | None) -> tuple[bytes, str]:
    """``(body, content type)`` of ``POST /jobs``: ``code`` is added unless the spec has its own.

    YAML text that parses to a map is sent as JSON with ``code`` added (the service reads both
    the same way); text that does not parse (or is not a map) is sent unchanged, so the
    service's own message (``spec: not valid YAML at line 3 ...``) reaches the user.
    """
    if isinstance(spec, (str, bytes)):
        text = spec.decode("utf-8", errors="replace") if isinstance(spec, bytes) else spec
        doc = yaml_map(text) if code else None
        if doc is None:
            return text.encode(), "application/yaml"
        spec = doc
    doc = dict(spec)
    if code and not doc.get("code"):
        doc["code"] = dict(code)
    return json.dumps(doc, default=str).encode(), "application/json"


def yaml_map(text: str) -> dict[str, Any] | None:
    """The map in YAML ``text``; None for text the service should read as it is: not YAML, not
    a map, or a map with a key given twice (PyYAML would keep the last; the service refuses it
    and names the line)."""
    try:
        import yaml  # PyYAML (jupyter_server needs it); only to add `code` to a YAML spec
    except ImportError:  # pragma: no cover - then the spec goes as it is, without code
        return None

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
            keys = [
                k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge"
            ]
            if len(keys) != len(set(keys)):
                raise yaml.constructor.ConstructorError(None, None, "a key given twice", node.start_mark)
            return super().construct_mapping(node, deep)

    try:
        doc = yaml.load(text, Loader=Loader)  # a SafeLoader
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, dict) else None


def _q(value: str | int) -> str:
    return quote(str(value), safe="")


class JobCalls(ClientCalls):
    """Job and run calls; needs ``request``, ``create_call``, ``http``, ``check`` and ``url`` of the client.
    Creates (submit, clone, rerun) carry an ``Idempotency-Key`` and are retried with it after a
    dropped connection, so a retried submit makes one job."""

    def submit_job(
        self,
        spec: dict[str, Any] | str | bytes,
        *,
        source: str | None = None,
        vc: str | None = None,
        code: dict[str, Any] | None = None,
        directory: str | os.PathLike[str] | None = None,
    ) -> JobSubmitted:
        """Submit a spec (a dict, or YAML/JSON text). ``source="openpai"|"pytorchjob"``: ``spec``
        is that system's document. ``vc`` overrides the spec's VC. ``code``: sent as the job's
        ``code`` unless the spec has one; ``directory``: capture ``code`` from that directory
        (:func:`yitong_lab.jobs.code.capture`) when neither the spec nor ``code`` gives it.
        Imported documents carry no code (the service ignores it for them)."""
        params = {k: v for k, v in (("from", source), ("vc", vc)) if v}
        if source:
            text = spec if isinstance(spec, (str, bytes)) else json.dumps(spec)
            body, ctype = (text.encode() if isinstance(text, str) else text), "application/yaml"
        else:
            if code is None and directory is not None and not _has_code(spec):
                from yitong_lab.jobs.code import capture

                code = capture(directory)
            body, ctype = submission(spec, code)
        return self.create_call("POST", "/jobs", content=body, content_type=ctype, params=params or None)

    def preview_job(
        self, spec: dict[str, Any] | str | bytes, *, source: str | None = None, vc: str | None = None
    ) -> JobPreview:
        """A dry run of :meth:`submit_job`: ``{spec, notes, resources}``, the spec the document
        becomes (an imported one converted), every note, and what it would hold, after every check
        a submit makes; nothing is queued (``POST /jobs/preview``)."""
        params = {k: v for k, v in (("from", source), ("vc", vc)) if v}
        if source:
            text = spec if isinstance(spec, (str, bytes)) else json.dumps(spec)
            body, ctype = (text.encode() if isinstance(text, str) else text), "application/yaml"
        else:
            body, ctype = submission(spec, None)
        # sent like a create (its body may be YAML); the route has no side effect to repeat
        return self.create_call("POST", "/jobs/preview", content=body, content_type=ctype, params=params or None)

    def jobs(
        self,
        vc: str | None = None,
        state: str | None = None,
        user: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[Job]:
        """Jobs of your VCs (admins: all), newest first; queued ones carry ``position`` and ``reason``.
        One page: ``limit`` jobs (the service's most, 1000, when None) after the first ``offset``."""
        params: dict[str, Any] = {k: v for k, v in (("vc", vc), ("state", state), ("user", user)) if v}
        params.update({"offset": offset} if offset else {}, **({"limit": limit} if limit else {}))
        return self.request("GET", "/jobs", params=params or None)

    def job_events(self, job_id: int | None = None, seconds: float = 300.0) -> Iterator[dict[str, Any]]:
        """Pushed job changes (``GET /jobs/events``): first ``{"event": "ready"}`` once the service
        watches, then ``{"event": "job", "id", "state", "reason", "position", ...}`` per change of
        a job of your VCs (only ``job_id``'s when given), ``{"event": "resync"}`` when some were
        dropped. Ends after ``seconds`` (open it again to go on)."""
        import httpx

        params: dict[str, Any] = {"seconds": seconds} | ({"job": job_id} if job_id is not None else {})
        timeout = httpx.Timeout(self.timeout, read=60.0)  # the service sends a heartbeat every 15 s
        with self.http().stream("GET", self.url + "/jobs/events", params=params, timeout=timeout) as response:
            if response.is_error:
                response.read()
                self.check(response)
            kind = "message"
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    yield {"event": kind, **json.loads(line[6:])}

    def job(self, job_id: int) -> JobDetail:
        return self.request("GET", f"/jobs/{_q(job_id)}")

    def cancel_job(self, job_id: int) -> JobDetail:
        """Queued: cancelled at once; running: signalled, ``cancelled`` when its processes end."""
        return self.request("POST", f"/jobs/{_q(job_id)}/cancel")

    def retry_job(self, job_id: int) -> Job:
        """A failed, cancelled or preempted job is queued again (same id, one more attempt)."""
        return self.request("POST", f"/jobs/{_q(job_id)}/retry")

    def clone_job(self, job_id: int, patch: dict[str, Any] | None = None) -> JobSubmitted:
        """A new job of yours: the job's spec with ``patch`` merged in (maps merge key by key)."""
        return self.create_call("POST", f"/jobs/{_q(job_id)}/clone", json={"patch": patch or {}})

    def job_log(self, job_id: int, rank: int = 0, offset: int = 0) -> str:
        """What rank ``rank`` has written so far (from byte ``offset``)."""
        response = self._call("GET", f"/jobs/{_q(job_id)}/logs", params={"rank": rank, "offset": offset})
        if response.is_error:
            self.check(response)
        return response.text

    def follow_log(self, job_id: int, rank: int = 0, offset: int = 0) -> Iterator[str]:
        """The log as it is written, chunk by chunk, until the job ends (a queued job's log
        starts when it runs). A dropped connection is resumed from the bytes already read."""
        import codecs

        import httpx

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        timeout = httpx.Timeout(self.timeout, read=None)  # a quiet job sends nothing for a while
        tries, answered = 0, False
        while True:
            params = {"rank": rank, "offset": offset, "follow": 1}
            try:
                with self.http().stream(
                    "GET", self.url + f"/jobs/{_q(job_id)}/logs", params=params, timeout=timeout
                ) as response:
                    answered = True
                    if response.is_error:
                        response.read()
                        self.check(response)
                    for data in response.iter_raw():
                        offset += len(data)
                        tries = 0
                        text = decoder.decode(data)
                        if text:
                            yield text
                tail = decoder.decode(b"", final=True)
                if tail:
                    yield tail
                return
            except httpx.TransportError as exc:
                tries += 1
                if not answered:
                    raise YitongError(0, f"cannot reach the platform API at {self.url}: {exc}") from None
                if tries > 3:
                    raise YitongError(0, f"lost the log stream of job {job_id}: {exc}") from None
                import time

                time.sleep(min(2.0**tries, 10.0))

    def run(self, run_id: int) -> Run:
        """The ledger record of one attempt."""
        return self.request("GET", f"/runs/{_q(run_id)}")

    def rerun(self, run_id: int) -> JobSubmitted:
        """A new job of yours: the run's spec and code, inputs pinned to its dataset versions."""
        return self.create_call("POST", f"/runs/{_q(run_id)}/rerun")

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The raw ``httpx.Response`` (not checked); a connection failure is a ``YitongError``."""
        import httpx

        http = self.http()
        try:
            return http.request(method, self.url + path, **kwargs)
        except httpx.HTTPError as exc:
            raise YitongError(0, f"cannot reach the platform API at {self.url}: {exc}") from None


def _has_code(spec: Any) -> bool:
    if isinstance(spec, dict):
        return bool(spec.get("code"))
    text = spec.decode("utf-8", errors="replace") if isinstance(spec, bytes) else spec
    doc = yaml_map(text)
    return bool(doc and doc.get("code"))
