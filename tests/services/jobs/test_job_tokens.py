"""A job's own hub token, tried from inside real local jobs run by the real platform service process
against the real hub (fixtures ``hub`` and ``Proc`` from ``test_jobs_process``): it is the owner's
(never the service's, never admin), it can do no more than call the platform as the owner, it
expires with the job, and it is revoked when the attempt ends: success, failure, cancel, and an
end the service missed while it was down (revoked at the restart)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from jobs_helpers import py_job

from tests.services.jobs.test_jobs_process import Proc
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.jobs.tokens import expires_in, token_scopes

# run inside the job: what the job's token may and may not do, then its whole environment
PROBE = """
import json, os, pathlib, time, httpx
tok, api, hub = os.environ["JUPYTERHUB_API_TOKEN"], os.environ["YITONG_API_URL"], os.environ["HUB_API"]
h = {"Authorization": "token " + tok}
out = pathlib.Path(os.environ["YITONG_OUTPUT_DIR"])
seen = {
    "me": httpx.get(api + "/me", headers=h).json(),
    "hub_user": httpx.get(hub + "/user", headers=h).json(),
    "create_vc": httpx.post(api + "/vcs", headers=h, json={"name": "stolen", "quota": {"cpu": 1}}).status_code,
    "alloc_for_bob": httpx.post(api + "/allocations", headers=h, json={
        "user": "bob", "vc": "default", "profile": "cpu-small", "kind": "server", "ref": "bob/x"}).status_code,
    "hub_bob": httpx.get(hub + "/users/bob", headers=h).status_code,
    "hub_token_for_bob": httpx.post(hub + "/users/bob/tokens", headers=h, json={}).status_code,
    "hub_new_token": httpx.post(hub + "/users/alice/tokens", headers=h, json={}).status_code,
    "hub_list_tokens": httpx.get(hub + "/users/alice/tokens", headers=h).status_code,
    "env": dict(os.environ),
}
(out / "seen.json").write_text(json.dumps(seen))
for _ in range(600):  # until the test has looked at the token from outside
    if (out / "go").exists():
        break
    time.sleep(0.1)
"""

# dumps its environment at once, then ends as told by $END
DUMP = """
import json, os, pathlib, sys, time
out = pathlib.Path(os.environ["YITONG_OUTPUT_DIR"])
(out / "seen.json").write_text(json.dumps({"env": dict(os.environ)}))
end = os.environ["END"]
t = time.monotonic()  # "succeed" and "fail" end once the test has looked at the token
while end in ("succeed", "fail") and not (out / "go").exists() and time.monotonic() - t < 60:
    time.sleep(0.05)
if end == "fail":
    sys.exit(3)
time.sleep({"succeed": 0, "cancel": 120, "later": 4}[end])
"""


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'yitong.sqlite'}"


def seen(proc: Proc, job_id: int, timeout: float = 60) -> dict:
    path = proc.data / "jobs" / str(job_id) / "outputs" / "seen.json"
    deadline = time.monotonic() + timeout
    while not path.exists():
        job = proc.call("alice", "GET", f"jobs/{job_id}").json()
        assert job["state"] in ("queued", "admitted", "running"), (job, proc.log.read_text()[-3000:])
        assert time.monotonic() < deadline, "the job never wrote what it saw"
        time.sleep(0.1)
    time.sleep(0.1)
    return json.loads(path.read_text())


def hub_status(hub, token: str) -> int:
    return httpx.get(hub.api_url + "/user", headers={"Authorization": f"token {token}"}, timeout=10).status_code


def submit(proc: Proc, program: str, **env) -> int:
    body = py_job("tok", "vision", program, env=env, max_run_time="10m")
    r = proc.call("alice", "POST", "jobs", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_expiry_follows_max_run_time():
    base = {"name": "a", "vc": "v", "environment": {"kernel": "python3"}, "command": ["true"]}
    assert expires_in(spec_from_dict(base), 86400, 3600) == 86400
    assert expires_in(spec_from_dict({**base, "max_run_time": "10m"}), 86400, 3600) == 600 + 3600
    assert token_scopes("yitong") == [
        "access:services!service=yitong",
        "read:users:name!user",
        "read:users:groups!user",
    ]


def test_job_token_is_the_owners_and_nothing_more(proc: Proc, hub):
    started = datetime.now(UTC)
    job_id = submit(proc, PROBE, HUB_API=hub.api_url)
    got = seen(proc, job_id)
    env, token = got["env"], got["env"]["JUPYTERHUB_API_TOKEN"]
    # the owner, through the platform and through the hub; not admin, not a service
    assert (got["me"]["name"], got["me"]["kind"], got["me"]["admin"]) == ("alice", "user", False)
    assert got["hub_user"]["name"] == "alice" and got["hub_user"]["kind"] == "user"
    assert set(got["hub_user"]["scopes"]) == {
        "access:services!service=yitong",
        "read:users:name!user=alice",
        "read:users:groups!user=alice",
    }
    # nothing beyond: no VC, nobody else, no more tokens
    assert got["create_vc"] == 403
    assert got["alloc_for_bob"] in (403, 404, 422), got["alloc_for_bob"]
    assert got["hub_bob"] in (403, 404) and got["hub_token_for_bob"] == 403
    assert got["hub_new_token"] == 403 and got["hub_list_tokens"] == 403
    # the service's token is nowhere in the job's environment; the SDK's two names carry the job's
    assert hub.service_token not in env.values() and hub.admin_token not in env.values()
    assert env["YT_TOKEN"] == token and env["YITONG_JOB_TOKEN"] != token
    # seen from outside while it runs: one token noted for this attempt, expiring with max_run_time + grace
    # (the session's hub also holds tokens of earlier tests' services, whose job ids start at 1 too)
    tokens = hub.api("GET", "/users/alice/tokens").json()["api_tokens"]
    mine = [
        t
        for t in tokens
        if t["note"] == f"yitong job {job_id} attempt 1"
        and datetime.fromisoformat(t["created"]) >= started - timedelta(seconds=1)
    ]
    assert len(mine) == 1 and mine[0]["expires_at"], tokens
    assert sorted(mine[0]["scopes"]) == sorted(s.replace("!user", "!user=alice") for s in token_scopes("yitong"))
    left = datetime.fromisoformat(mine[0]["expires_at"]) - datetime.now(UTC)
    assert 4100 < left.total_seconds() <= 4200  # max_run_time 10m + the default grace of an hour
    (proc.data / "jobs" / str(job_id) / "outputs" / "go").write_text("")
    assert proc.wait("alice", job_id)["state"] == "succeeded"
    deadline = time.monotonic() + 10  # revoked in the background once the attempt ended
    while hub_status(hub, token) != 403:  # the hub refuses it
        assert time.monotonic() < deadline, "the job's token still works after the job ended"
        time.sleep(0.05)
    assert proc.call("alice", "GET", "me").status_code == 200
    r = httpx.get(proc.base + "me", headers={"Authorization": f"token {token}"}, timeout=10)
    assert r.status_code == 401, r.text
    assert not [t for t in hub.api("GET", "/users/alice/tokens").json()["api_tokens"] if t["id"] == mine[0]["id"]]


@pytest.mark.parametrize("end, state", [("succeed", "succeeded"), ("fail", "failed"), ("cancel", "cancelled")])
def test_token_is_revoked_when_the_attempt_ends(proc: Proc, hub, end, state):
    job_id = submit(proc, DUMP, END=end)
    token = seen(proc, job_id)["env"]["JUPYTERHUB_API_TOKEN"]
    assert hub_status(hub, token) == 200
    if end == "cancel":
        assert proc.call("alice", "POST", f"jobs/{job_id}/cancel").status_code == 202
    (proc.data / "jobs" / str(job_id) / "outputs" / "go").write_text("")
    assert proc.wait("alice", job_id)["state"] == state
    deadline = time.monotonic() + 10
    # the record goes after the hub's answer to the revocation, which this process may see first
    while hub_status(hub, token) != 403 or list((proc.data / "job-tokens").glob(f"{job_id}-*.json")):
        assert time.monotonic() < deadline, "the job's token (or its record) outlived the job"
        time.sleep(0.1)


def test_token_of_a_job_that_ended_while_the_service_was_down_is_revoked_at_restart(proc: Proc, hub):
    job_id = submit(proc, DUMP, END="later")
    token = seen(proc, job_id)["env"]["JUPYTERHUB_API_TOKEN"]
    proc.kill9()
    time.sleep(6)  # the job ends meanwhile; nobody revoked its token
    assert hub_status(hub, token) == 200
    proc.start()
    deadline = time.monotonic() + 20
    while hub_status(hub, token) != 403:
        assert time.monotonic() < deadline, "the token outlived its job after the restart"
        time.sleep(0.1)
    assert proc.wait("alice", job_id)["state"] in ("succeeded", "failed")


# writes its environment at once, then waits for the test's "go"
HOLD = """
import json, os, pathlib, time
out = pathlib.Path(os.environ["YITONG_OUTPUT_DIR"])
(out / "seen.json").write_text(json.dumps({"env": dict(os.environ)}))
t = time.monotonic()
while not (out / "go").exists() and time.monotonic() - t < 60:
    time.sleep(0.05)
"""


def test_a_burst_of_attempts_takes_tokens_minted_ahead_and_unused_ones_are_revoked(hub, db_url, tmp_path):
    """Spares (tokens.py): the third and later attempts of a burst take a token minted ahead, the
    same kind of token (the owner's, the same scopes, an expiry of max_run_time + grace less the
    seconds it waited); every token is revoked once its attempt ends, and spares nobody took are
    revoked once they are older than ``jobs.token_spare_age``, also after a kill -9 and restart."""
    import yaml

    from yitong_services.jobs.tokens import SPARE_NOTE

    proc = Proc(hub, db_url, tmp_path)
    settings = yaml.safe_load(proc.settings.read_text())
    settings["jobs"]["token_spare_age"] = 15  # the burst's starts each well within it, also on a loaded machine
    proc.settings.write_text(yaml.safe_dump(settings))
    proc.start()
    try:
        started = datetime.now(UTC)
        jobs, tokens = [], []
        for _ in range(4):  # one after another: each is minted for (or taken) before the next is asked
            jobs.append(submit(proc, HOLD))
            tokens.append(seen(proc, jobs[-1])["env"]["JUPYTERHUB_API_TOKEN"])
        assert len(set(tokens)) == 4 and all(hub_status(hub, t) == 200 for t in tokens)
        records = {j: json.loads((proc.data / "job-tokens" / f"{j}-1.json").read_text()) for j in jobs}
        listed = {t["id"]: t for t in hub.api("GET", "/users/alice/tokens").json()["api_tokens"]}
        notes = [listed[records[j]["id"]]["note"] for j in jobs]
        assert notes[:2] == [f"yitong job {jobs[0]} attempt 1", f"yitong job {jobs[1]} attempt 1"], notes
        assert notes[2:] == [SPARE_NOTE, SPARE_NOTE], notes  # taken from the spares
        for j in jobs:
            t = listed[records[j]["id"]]
            assert sorted(t["scopes"]) == sorted(s.replace("!user", "!user=alice") for s in token_scopes("yitong"))
            now = datetime.now(UTC)
            left = (datetime.fromisoformat(t["expires_at"]) - now).total_seconds()
            assert 4200 - (now - started).total_seconds() - 2 < left <= 4200, t  # 10m + grace, less its wait
        for j in jobs:
            (proc.data / "jobs" / str(j) / "outputs" / "go").write_text("")
        for j in jobs:
            assert proc.wait("alice", j)["state"] == "succeeded"

        def spares_left() -> list[dict]:
            return [
                t
                for t in hub.api("GET", "/users/alice/tokens").json()["api_tokens"]
                if t["note"] == SPARE_NOTE and datetime.fromisoformat(t["created"]) >= started - timedelta(seconds=1)
            ]

        deadline = time.monotonic() + 60  # unused spares: once older than token_spare_age, at a sweep
        while (
            any(hub_status(hub, t) != 403 for t in tokens)
            or spares_left()
            or list((proc.data / "job-tokens").glob("*.json"))
        ):
            assert time.monotonic() < deadline, ("tokens outlived their attempts", spares_left())
            time.sleep(0.2)

        # spares a killed service held are revoked by the next one
        for _ in range(3):
            j = submit(proc, HOLD)
            seen(proc, j)
            (proc.data / "jobs" / str(j) / "outputs" / "go").write_text("")
            proc.wait("alice", j)
        assert list((proc.data / "job-tokens").glob("spare-*.json")) and spares_left()
        proc.kill9()
        proc.start()
        deadline = time.monotonic() + 20
        while spares_left() or list((proc.data / "job-tokens").glob("spare-*.json")):
            assert time.monotonic() < deadline, ("spares outlived a restart", spares_left())
            time.sleep(0.2)
    finally:
        proc.stop()
