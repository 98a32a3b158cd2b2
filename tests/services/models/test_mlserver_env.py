"""MLServer's environment built on first need (models/mlserver_env.py), through a real service
process, the real job queue and real replica jobs: the settings file's ``models.mlserver`` names
a missing environment and ``models.build`` a small FAKE builder (a Python script standing in for
``make mlserver``, which pip-installs ~2 GB: the one boundary mocked here). A failed build fails
the endpoint with its reason, and the SDK's (``yt deploy create``'s) wait returns at once; a
build that makes the environment lets the waiting replica start in it."""

from __future__ import annotations

import sys
import time

import pytest
import yaml

from tests.services.jobs.test_jobs_process import Proc
from yitong_services.models import mlserver_env

# the first build fails as pip does; the next one (a deploy asks again) makes <venv>/bin/python
# (this interpreter) and bin/mlserver, so the replica then starts in it
BUILDER = f"""
import os, sys, time
venv = os.environ["YITONG_MLSERVER_VENV"]
tried = os.path.join(os.path.dirname(venv), "tried")
if not os.path.exists(tried):
    open(tried, "w").close()
    print("Collecting mlserver==1.7.1", flush=True)
    time.sleep(2)
    print("ERROR: Could not find a version that satisfies the requirement mlserver==1.7.1", flush=True)
    sys.exit(1)
os.makedirs(venv + "/bin")
time.sleep(1)
os.symlink({sys.executable!r}, venv + "/bin/python")
with open(venv + "/bin/mlserver", "w") as f:
    f.write("#!/bin/sh\\n")
os.chmod(venv + "/bin/mlserver", 0o755)
print("built", flush=True)
"""


@pytest.fixture
def proc(hub, db_url, tmp_path):
    p = Proc(hub, db_url, tmp_path)
    (tmp_path / "builder.py").write_text(BUILDER)
    settings = yaml.safe_load(p.settings.read_text())
    settings["models"] = {
        "mlserver": str(tmp_path / "mlenv" / "bin" / "mlserver"),
        "build": [sys.executable, str(tmp_path / "builder.py")],
    }
    p.settings.write_text(yaml.safe_dump(settings))
    p.start()
    yield p
    for e in p.call("admin", "GET", "endpoints").json():
        p.call("admin", "DELETE", f"endpoints/{e['name']}")
    p.stop()


def register(p: Proc, tmp_path) -> None:
    from yitong_lab.client import Client
    from yitong_lab.models.sdk import Models

    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "model.joblib").write_bytes(b"not read before MLServer loads it")
    with Client(p.base.rstrip("/"), p.hub.tokens["alice"]) as c:
        Models(c).register("vision/iris", model_dir, framework="sklearn", format="joblib", progress=None)


def test_a_failed_build_fails_the_deploy_at_once_then_the_next_deploy_builds_and_starts(proc, tmp_path):
    from yitong_lab.client import Client, YitongError
    from yitong_lab.models.sdk import Endpoints

    p = proc
    register(p, tmp_path)
    with Client(p.base.rstrip("/"), p.hub.tokens["alice"]) as c:
        e = Endpoints(c).create("iris", "vision/iris@1", "cpu-small")  # no wait: what it says meanwhile
        assert e["state"] in ("queued", "starting"), e
        building = e
        while "building the model server environment" not in (building.get("reason") or ""):
            assert building["state"] != "failed", building
            building = Endpoints(c).get("iris")
        assert building["state"] == "starting" and "% (log: " in building["reason"], building
        started = time.monotonic()
        with pytest.raises(YitongError) as failed:
            Endpoints(c)._wait(building, 60, lambda e: e["state"] == "ready", "is not ready")
        took = time.monotonic() - started
    words = str(failed.value)
    assert failed.value.status == 502  # the endpoint's server failed; 504 is the wait running out
    assert "endpoint iris failed: the model server environment could not be built" in words
    assert "ERROR: Could not find a version that satisfies the requirement mlserver==1.7.1 (exit 1)" in words
    assert "mlserver-install.log" in words
    assert took < 20, took  # not the 60 s it was given (load on this machine: seconds, not 60)
    assert "Collecting mlserver==1.7.1" in (p.data / "logs" / "mlserver-install.log").read_text()

    # the next deploy asks again: this build works, and the replica that waited starts in it
    r = p.call("alice", "POST", "endpoints/iris/deploy", json={"model": "vision/iris@1", "profile": "cpu-small"})
    assert r.status_code == 200, r.text
    [job] = [x["job"] for x in r.json()["replicas"] if x["job_state"] not in ("failed", "gone")]
    # the fake environment has no MLServer (nor uvicorn): the replica, started in it, ends on an import
    done = p.wait("alice", job, timeout=120)
    assert done["state"] == "failed", done
    log = p.call("alice", "GET", f"jobs/{job}/logs").text
    assert "waiting for the model server environment to be built" in log
    assert "the model server environment is there: starting MLServer" in log
    assert "replica_server.py" in log and "ModuleNotFoundError: No module named" in log, log[-2000:]
    status = yaml.safe_load((p.data / "endpoints" / "mlserver-env.json").read_text())
    assert status["state"] == "ready"
    e = p.call("alice", "GET", "endpoints/iris").json()
    assert "model server environment" not in e["reason"], e  # the replica's own failure now


@pytest.mark.parametrize(
    ("tail", "code", "reason"),
    [
        (
            "Collecting x\nERROR: No matching distribution found for x\n",
            1,
            "ERROR: No matching distribution found for x (exit 1)",
        ),
        (
            "gcc ...\nfoo.c:1:10: fatal error: gssapi/gssapi.h: No such file or directory\nmore\n",
            2,
            "foo.c:1:10: fatal error: gssapi/gssapi.h: No such file or directory (exit 2)",
        ),
        ("just this\n", 3, "just this (exit 3)"),
        ("", 4, "the build exited 4"),
    ],
)
def test_reason_of_a_failed_build(tail, code, reason):
    assert mlserver_env.reason_of(tail, code) == reason


def test_the_docs_models_block_is_a_settings_section():
    import re
    from pathlib import Path

    from yitong_services.core.settings import Settings

    text = (Path(__file__).resolve().parents[3] / "docs" / "models.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if b.startswith("models:")]
    models = Settings.model_validate(yaml.safe_load(block)).models
    assert str(models.mlserver) == "/opt/mlserver/bin/mlserver" and models.build is None


def test_the_default_build_is_make_mlserver_into_the_named_folder(tmp_path):
    from yitong_services.core.settings import Settings
    from yitong_services.models import mlserver

    settings = Settings.model_validate({"data_dir": str(tmp_path)})
    venv = tmp_path / "venv"
    assert mlserver_env.build_command(settings, venv) == [
        "make",
        "-C",
        str(mlserver.CHECKOUT),
        "mlserver",
        f"MLSERVER_VENV={venv}",
    ]
    settings = Settings.model_validate({"data_dir": str(tmp_path), "models": {"build": []}})
    assert mlserver_env.build_command(settings, venv) == []


def test_a_build_nobody_recorded_fails_its_waiting_replicas(monkeypatch, tmp_path):
    """A build whose service stopped before it ended (its pid gone, its end never written): the
    status says failed, so replicas waiting on it (replica_wait.py) end rather than wait for ever."""
    import json
    import subprocess

    from yitong_services.core.settings import Settings
    from yitong_services.models import mlserver

    monkeypatch.setitem(mlserver._configured, "mlserver", str(tmp_path / "env" / "bin" / "mlserver"))
    settings = Settings.model_validate({"data_dir": str(tmp_path)})
    gone = subprocess.Popen(["true"])
    gone.wait()
    path = mlserver_env.status_file(settings)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"state": "building", "pid": gone.pid, "log": "/l.log"}))
    state = mlserver_env.state(settings)
    assert state.state == "failed" and "the build stopped before it was recorded" in state.reason
    assert json.loads(path.read_text())["state"] == "failed"
    wait = subprocess.run(
        [sys.executable, "-P", str(mlserver.WAIT), str(path), mlserver.executable(), mlserver.framework_python()],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert wait.returncode == 1
    assert "the model server environment could not be built: the build stopped" in wait.stderr
