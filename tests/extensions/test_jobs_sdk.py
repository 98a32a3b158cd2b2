"""The jobs SDK (``Client`` job/run calls), code capture in real git repositories, ``log_metrics``.

Against the stand-in platform API (conftest ``platform_api.jobs``); the real service: tests/e2e.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from yitong_lab.client import Client, YitongError
from yitong_lab.jobs import code as codemod
from yitong_lab.jobs.sdk import submission

SPEC = {"name": "train", "vc": "vision", "command": ["python", "train.py"]}
CODE = {"commit": "ab" * 20, "dirty_hash": None, "path": "/work"}


# -- submission body (pure) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, code, expected_type, expected",
    [
        (SPEC, None, "application/json", SPEC),
        (SPEC, CODE, "application/json", {**SPEC, "code": CODE}),
        ({**SPEC, "code": {"commit": "cd" * 20}}, CODE, "application/json", {**SPEC, "code": {"commit": "cd" * 20}}),
        ("name: train\nvc: vision\ncommand: [python, train.py]\n", CODE, "application/json", {**SPEC, "code": CODE}),
        ("name: train\nvc: vision\n", None, "application/yaml", "name: train\nvc: vision\n"),
        ("name: [unclosed\n", CODE, "application/yaml", "name: [unclosed\n"),  # the service says why
        ("- a list\n", CODE, "application/yaml", "- a list\n"),
    ],
)
def test_submission_body(spec, code, expected_type, expected):
    body, ctype = submission(spec, code)
    assert ctype == expected_type
    assert (json.loads(body) if ctype.endswith("json") else body.decode()) == expected


# -- the calls against the stand-in ---------------------------------------------------------------


def test_submit_list_show(yt_env):
    c = Client()
    job = c.submit_job(SPEC, code=CODE)
    assert (job["id"], job["state"], job["position"], job["code"]) == (1, "queued", 1, CODE)
    assert yt_env.jobs.received[-1][0] == "application/json"
    yaml_job = c.submit_job("name: two\nvc: default\ncommand: python x.py\n", vc="vision")
    assert (yaml_job["vc"], yaml_job["user"]) == ("vision", "alice")
    assert yt_env.jobs.received[-1] == (
        "application/yaml",
        {"name": "two", "vc": "default", "command": "python x.py"},
        {"vc": "vision"},
    )
    assert [j["id"] for j in c.jobs()] == [2, 1]
    assert [j["id"] for j in c.jobs(user="bob")] == []
    detail = c.job(1)
    assert detail["outputs_path"].endswith("/jobs/1/outputs") and detail["ranks"] == []


def test_submit_refusals_carry_the_services_sentence(yt_env):
    c = Client()
    with pytest.raises(YitongError) as info:
        c.submit_job("name: [unclosed\n")
    assert (info.value.status, info.value.detail) == (422, "spec: not valid YAML or JSON at line 2, column 1")
    with pytest.raises(YitongError) as info:
        c.submit_job({"name": "x", "vc": "vision"})
    assert info.value.detail == "spec.command: Field required"
    with pytest.raises(YitongError) as info:
        Client(token="bob-token").submit_job(SPEC)
    assert (info.value.status, info.value.detail) == (403, "bob is not a member of VC vision")


def test_submit_from_directory_records_code(yt_env, tmp_path):
    repo = git_repo(tmp_path / "repo")
    job = Client().submit_job(SPEC, directory=repo)
    assert job["code"]["commit"] == git(repo, "rev-parse", "HEAD") and job["code"]["dirty_hash"] is None
    assert job["code"]["path"] == str(repo.resolve())
    # a spec with its own code keeps it; imports carry none
    job = Client().submit_job({**SPEC, "code": {"commit": "abcd"}}, directory=repo)
    assert job["code"]["commit"] == "abcd"
    openpai = "protocolVersion: 2\nname: My_Job\ntype: job\ntaskRoles: {main: {commands: [echo hi]}}\n"
    job = Client().submit_job(openpai, source="openpai", vc="vision", directory=repo)
    assert (job["name"], job["code"]["commit"]) == ("my-job", None)
    assert yt_env.jobs.received[-1][2] == {"from": "openpai", "vc": "vision"}


def test_cancel_retry_clone_run_rerun(yt_env):
    c = Client()
    running = yt_env.jobs.add(state="running", spec={"env": {"A": "1"}})
    assert c.cancel_job(running["id"])["reason"] == "cancelling"
    queued = c.submit_job(SPEC)
    assert c.cancel_job(queued["id"])["state"] == "cancelled"
    with pytest.raises(YitongError) as info:
        c.cancel_job(queued["id"])
    assert (info.value.status, info.value.detail) == (409, f"job {queued['id']} is already cancelled")
    assert c.retry_job(queued["id"])["state"] == "queued"
    clone = c.clone_job(running["id"], {"env": {"B": "2"}, "cpu": 2})
    assert clone["spec"]["env"] == {"A": "1", "B": "2"} and clone["spec"]["cpu"] == 2
    yt_env.jobs.runs[7] = {"run": 7, "job": running["id"], "spec": running["spec"], "code": CODE, "metrics": {}}
    assert c.run(7)["run"] == 7
    assert c.rerun(7)["code"] == CODE
    with pytest.raises(YitongError) as info:
        Client(token="bob-token").run(7)
    assert info.value.detail == "there is no run 7"


def test_job_log_and_follow(yt_env):
    job = yt_env.jobs.add(
        state="running",
        logs={0: b"epoch 1\n", 1: "rang \u00e9 1\n".encode()},
        pending=[b"epoch 2\n", "\u00e9".encode()[:1], "\u00e9".encode()[1:] + b"\n"],
    )
    c = Client()
    assert c.job_log(job["id"], rank=1) == "rang \u00e9 1\n"
    assert c.job_log(job["id"], offset=6) == "1\n"
    assert "".join(c.follow_log(job["id"])) == "epoch 1\nepoch 2\n\u00e9\n"  # a split character is whole
    assert c.job(job["id"])["state"] == "succeeded"


def test_follow_resumes_a_dropped_stream(yt_env):
    job = yt_env.jobs.add(state="running", logs={0: b"0123456789"}, pending=[b"abcdef", b"ghij\n"])
    yt_env.jobs.drop_after = 13
    assert "".join(Client().follow_log(job["id"])) == "0123456789abcdefghij\n"
    offsets = [r[1] for r in yt_env.requests if "/logs" in r[1]]
    assert len(offsets) == 2 and "offset=13" in offsets[1]


def test_follow_refusal(yt_env):
    job = yt_env.jobs.add(state="running")
    with pytest.raises(YitongError) as info:
        list(Client(token="bob-token").follow_log(job["id"]))
    assert (info.value.status, info.value.detail) == (404, f"there is no job {job['id']}")


# -- code capture in real repositories -------------------------------------------------------------


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "t")
    (path / "train.py").write_text("print('hi')\n")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    return path


def test_capture_clean_dirty_untracked(tmp_path):
    repo = git_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    clean = codemod.capture(repo)
    assert clean == {"commit": head, "dirty_hash": None, "path": str(repo.resolve())}
    (repo / "run.log").write_text("ignored files do not count\n")
    assert codemod.capture(repo)["dirty_hash"] is None

    (repo / "train.py").write_text("print('changed')\n")
    dirty = codemod.capture(repo)
    assert dirty["commit"] == head and dirty["dirty_hash"].startswith("blake3:")
    assert codemod.capture(repo) == dirty  # stable
    (repo / "train.py").write_text("print('changed again')\n")
    assert codemod.capture(repo)["dirty_hash"] != dirty["dirty_hash"]

    (repo / "train.py").write_text("print('hi')\n")
    (repo / "notes.txt").write_text("untracked\n")
    untracked = codemod.capture(repo)["dirty_hash"]
    assert untracked not in (None, dirty["dirty_hash"])
    (repo / "notes.txt").write_text("untracked, edited\n")
    assert codemod.capture(repo)["dirty_hash"] != untracked  # untracked contents count

    sub = repo / "pkg"
    sub.mkdir()
    (sub / "m.py").write_text("x = 1\n")
    inside = codemod.capture(sub)  # whole repository, path = the subdir
    assert inside["commit"] == head and inside["path"] == str(sub.resolve())
    assert inside["dirty_hash"] == codemod.capture(repo)["dirty_hash"]


def test_capture_ignores_user_diff_config(tmp_path, monkeypatch):
    repo = git_repo(tmp_path / "repo")
    (repo / "train.py").write_text("print('changed')\n")
    plain = codemod.capture(repo)["dirty_hash"]
    git(repo, "config", "diff.noprefix", "true")
    git(repo, "config", "diff.mnemonicPrefix", "true")
    assert codemod.capture(repo)["dirty_hash"] == plain


def test_capture_repo_without_commits(tmp_path):
    repo = tmp_path / "new"
    repo.mkdir()
    git(repo, "init", "-q")
    assert codemod.capture(repo) == {"commit": None, "dirty_hash": None, "path": str(repo.resolve())}
    (repo / "a.py").write_text("a\n")
    assert codemod.capture(repo)["dirty_hash"].startswith("blake3:")


def test_capture_not_a_repository(tmp_path, monkeypatch):
    d = tmp_path / "plain"
    (d / "src").mkdir(parents=True)
    (d / "src" / "a.py").write_text("a\n")
    (d / ".hidden").write_text("skipped\n")
    first = codemod.capture(d)
    assert first["commit"] is None and first["dirty_hash"].startswith("blake3:")
    (d / ".hidden").write_text("still skipped\n")
    assert codemod.capture(d) == first
    (d / "src" / "a.py").write_text("b\n")
    assert codemod.capture(d)["dirty_hash"] != first["dirty_hash"]
    monkeypatch.setattr(codemod, "MAX_FILES", 0)  # a home directory: no fingerprint
    assert codemod.capture(d) == {"commit": None, "dirty_hash": None, "path": str(d.resolve())}
    with pytest.raises(NotADirectoryError):
        codemod.capture(d / "src" / "a.py")


def test_capture_without_git(tmp_path, monkeypatch):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no git at all: files are hashed
    found = codemod.capture(repo)
    assert found["commit"] is None and found["dirty_hash"].startswith("blake3:")


# -- log_metrics -------------------------------------------------------------------------------------


def job_env(monkeypatch, platform_api, job_id, token="job-secret"):
    platform_api.jobs.tokens[token] = job_id
    monkeypatch.setenv("YITONG_API_URL", platform_api.url)
    monkeypatch.setenv("YITONG_JOB_ID", str(job_id))
    monkeypatch.setenv("YITONG_JOB_TOKEN", token)


def test_log_metrics_in_a_job(yt_env, monkeypatch):
    import yitong_lab

    job = yt_env.jobs.add(state="running")
    job_env(monkeypatch, yt_env, job["id"])
    assert yitong_lab.log_metrics(loss=0.5) == {"run": job["id"], "metrics": {"loss": 0.5}}
    out = yitong_lab.log_metrics({"loss": 0.25, "nan": float("nan")}, epoch=3)
    assert out["metrics"] == {"loss": 0.25, "nan": "NaN", "epoch": 3}
    assert yt_env.requests[-1][2] == "token job-secret"  # the job's token, not the user's


def test_log_metrics_numpy_and_torch_values(yt_env, monkeypatch):
    import numpy
    import torch

    from yitong_lab.metrics import jsonable, log_metrics

    assert jsonable(
        {"a": numpy.float32(0.5), "b": torch.tensor(2.0), "c": numpy.arange(3), "d": (1, float("inf"))}
    ) == {"a": 0.5, "b": 2.0, "c": [0, 1, 2], "d": [1, "Infinity"]}
    job = yt_env.jobs.add(state="running")
    job_env(monkeypatch, yt_env, job["id"])
    assert log_metrics(acc=torch.tensor(0.75))["metrics"] == {"acc": 0.75}
    with pytest.raises(TypeError, match="metric value"):
        log_metrics(bad=object())
    with pytest.raises(ValueError):
        log_metrics()


def test_log_metrics_wrong_token_raises(yt_env, monkeypatch):
    from yitong_lab.metrics import log_metrics

    job = yt_env.jobs.add(state="running")
    job_env(monkeypatch, yt_env, job["id"])
    monkeypatch.setenv("YITONG_JOB_TOKEN", "forged")
    with pytest.raises(YitongError) as info:
        log_metrics(loss=1)
    assert (info.value.status, info.value.detail) == (401, f"a valid token of job {job['id']} is required")


def test_log_metrics_outside_a_job_warns_once(monkeypatch):
    from yitong_lab import metrics

    for name in metrics.ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(metrics, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert metrics.log_metrics(loss=0.1) is None
        assert metrics.log_metrics(loss=0.2) is None
    assert [w.category for w in caught] == [metrics.NotInAJob]
    assert "not running inside a Yitong job" in str(caught[0].message)


def test_log_metrics_is_light():
    code = (
        "import sys, yitong_lab; yitong_lab.log_metrics\n"
        "import yitong_lab.metrics\n"
        "print(sorted(m for m in ('httpx', 'yaml', 'blake3', 'urllib.request', 'yitong_lab.datasets')"
        " if m in sys.modules))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("YITONG_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "[]"), result.stderr


def test_capture_large_files_count_by_size_and_edges(tmp_path, monkeypatch):
    repo = git_repo(tmp_path / "repo")
    monkeypatch.setattr(codemod, "LARGE", 100)
    monkeypatch.setattr(codemod, "EDGE", 10)
    data = bytearray(b"x" * 1000)
    (repo / "data.bin").write_bytes(bytes(data))
    first = codemod.capture(repo)["dirty_hash"]
    data[500] = ord("y")  # the middle is not read
    (repo / "data.bin").write_bytes(bytes(data))
    assert codemod.capture(repo)["dirty_hash"] == first
    data[-1] = ord("z")  # the last bytes are
    (repo / "data.bin").write_bytes(bytes(data))
    assert codemod.capture(repo)["dirty_hash"] != first
    (repo / "data.bin").write_bytes(bytes(data) + b"!")  # and the size
    assert codemod.capture(repo)["dirty_hash"] != first
