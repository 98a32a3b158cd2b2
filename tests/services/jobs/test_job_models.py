"""The job and run answers have pydantic models (jobs/schemas.py, in OpenAPI) and the clients'
generated types match what the service really sends: same keys, same values as before they were typed."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from anyio import to_thread
from fastapi.encoders import jsonable_encoder
from jobs_helpers import py_job, wait_state

from yitong_lab import api_types
from yitong_services.core.settings import ServiceSettings
from yitong_services.jobs import ledger, records
from yitong_services.jobs.models import Job
from yitong_services.jobs.schemas import JobDetail, JobOut, RunOut

FAST = {"jobs": {"poll_interval": 0.1}}
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$")


def _job(**fields) -> Job:
    base = dict(
        id=7, name="train", vc="vision", user="alice", spec={"command": ["true"]}, code={}, inputs=[],
        state="queued", reason="", priority=0, created=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), admitted=None,
        started=None, finished=None, exit_code=None, attempts=0, backend="local", backend_ref=None, hosts=[],
        ports={}, devices={},
    )  # fmt: skip
    return Job(**(base | fields))


def test_job_model_keeps_the_answer_as_it_was():
    for job in (
        _job(),
        _job(
            state="running",
            devices={"type": "nvidia.com/gpu", "count": 2, "visible": [0, 1]},
            inputs=[{"dataset": "vision/cats", "mount": "cats", "version": 3, "manifest": "ab" * 32, "version_id": 9}],
            started=datetime(2026, 1, 2, 3, 5, tzinfo=UTC),
        ),
    ):
        before = jsonable_encoder(records.job_dict(job, None, [1, 2]))  # what the untyped route sent
        assert JobOut.model_validate(records.job_dict(job, None, [1, 2])).model_dump(mode="json") == before
    assert before["devices"] == {"type": "nvidia.com/gpu", "count": 2, "visible": [0, 1]}
    assert _job().devices == {} and JobOut.model_validate(records.job_dict(_job())).model_dump()["devices"] == {}


def test_run_model_keeps_every_key_of_the_record():
    record = ledger.start_record(
        run_id=4, job={"id": 7, "name": "train", "vc": "vision", "user": "alice"}, attempt=1,
        spec={"command": ["true"]}, inputs=[], code={"commit": "abc"}, environment={"python": "/x"},
        devices={}, backend="local", started="2026-01-02T03:04:05+00:00",
    )  # fmt: skip
    record = ledger.finish_record(
        record, state="succeeded", exit_code=0, finished="2026-01-02T03:05:00+00:00", metrics={"loss": 0.1},
        artifacts=[{"path": "model.txt", "size": 1, "blake3": "cd" * 32}],
    )  # fmt: skip
    record["added_later"] = {"kept": True}  # a stored record may carry keys the model does not name
    assert RunOut.model_validate(record).model_dump(mode="json") == jsonable_encoder(record)


def test_generated_types_name_the_model_fields():
    for model, typed in ((JobOut, api_types.JobOut), (JobDetail, api_types.JobDetail), (RunOut, api_types.RunOut)):
        assert set(typed.__annotations__) == set(model.model_fields)


async def test_answers_have_the_generated_types_keys(service_factory):
    async with service_factory(**FAST) as svc:
        assert to_thread.current_default_thread_limiter().total_tokens == ServiceSettings().threads
        r = await svc.call("alice", "POST", "jobs", json=py_job("typed", "vision", "print('hi')"))
        assert r.status_code == 201, r.text
        submitted = r.json()
        assert set(submitted) == set(api_types.JobSubmitted.__annotations__)
        assert ISO_UTC.match(submitted["created"]), submitted["created"]
        job = await wait_state(svc, "alice", submitted["id"])
        assert job["state"] == "succeeded", job
        assert set(job) == set(api_types.JobDetail.__annotations__)
        listed = (await svc.call("alice", "GET", "jobs")).json()
        assert [set(j) for j in listed] == [set(api_types.JobOut.__annotations__)]
        run = (await svc.call("alice", "GET", f"runs/{job['runs'][0]}")).json()
        assert set(api_types.RunOut.__annotations__) <= set(run)
        assert run["metrics"] == {} and run["artifacts"] == []
        retried = await svc.call("alice", "POST", f"jobs/{job['id']}/retry")
        assert retried.status_code == 409, retried.text  # a succeeded job: the sentence is unchanged
        assert (
            retried.json()["detail"]
            == f"job {job['id']} is succeeded; only failed, cancelled or preempted jobs can be retried"
        )
