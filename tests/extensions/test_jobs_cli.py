"""``yt job`` / ``yt run`` and ``%yt job`` / ``%%yt job submit`` against the stand-in platform API:
argument parsing, tables, code capture from the working directory, follow, refusals."""

import json
import subprocess
import time
from datetime import UTC, datetime

import pytest
from helpers import ipython as run_ipython

from yitong_lab.cli import job_tables
from yitong_lab.cli.grammar import run
from yitong_lab.cli.job import clone_patch, parse_value, tensorboard_url
from yitong_lab.jobs.cell import accelerator, cell_spec, default_vc, inputs, parse_pairs

SPEC_YAML = "name: train\nvc: vision\nenvironment: {kernel: python3}\ncommand: [python, train.py]\n"


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "proj"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.org")
    git(path, "config", "user.name", "t")
    (path / "train.py").write_text("print('hi')\n")
    (path / "spec.yaml").write_text(SPEC_YAML)
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    return path


# -- pure builders ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, value",
    [
        ("2", 2),
        ("0.5", 0.5),
        ("null", None),
        ("true", True),
        ("2h", "2h"),
        ('["python", "x.py"]', ["python", "x.py"]),
        ("007", "007"),
        ("", ""),
    ],
)
def test_parse_value(raw, value):
    assert parse_value(raw) == value


@pytest.mark.parametrize(
    "sets, envs, patch",
    [
        ([], [], {}),
        (["cpu=2"], [], {"cpu": 2}),
        (
            ["accelerator.count=2", "accelerator.type=nvidia.com/gpu"],
            [],
            {"accelerator": {"count": 2, "type": "nvidia.com/gpu"}},
        ),
        (
            ["command=python b.py --x=1"],
            ["LR=0.1", "A=b=c"],
            {"command": "python b.py --x=1", "env": {"LR": "0.1", "A": "b=c"}},
        ),
        (["env.X=1"], ["Y=2"], {"env": {"X": 1, "Y": "2"}}),
    ],
)
def test_clone_patch(sets, envs, patch):
    assert clone_patch(sets, envs) == patch


@pytest.mark.parametrize(
    "sets, envs, message",
    [
        (["cpu"], [], "--set 'cpu': expected NAME=VALUE"),
        (["a..b=1"], [], "empty field name"),
        (["a=1", "a.b=2"], [], "a is set to a value and a map at once"),
        ([], ["=x"], "--env '=x': expected NAME=VALUE"),
    ],
)
def test_clone_patch_refusals(sets, envs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        clone_patch(sets, envs)


@pytest.mark.parametrize(
    "environ, api, url",
    [
        ({"JUPYTERHUB_SERVICE_PREFIX": "/user/alice/"}, "", "/user/alice/yitong/jobs/12/tensorboard"),
        (
            {"JUPYTERHUB_SERVICE_PREFIX": "/user/alice/gpu/", "JUPYTERHUB_PUBLIC_URL": ""},
            "",
            "/user/alice/gpu/yitong/jobs/12/tensorboard",
        ),
        (
            {
                "JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/user/alice/",
                "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
            },
            "",
            "https://hub.example.org/user/alice/yitong/jobs/12/tensorboard",
        ),
        (
            {},
            "https://hub.example.org/services/yitong/api/v1",
            "https://hub.example.org/user/alice/yitong/jobs/12/tensorboard",
        ),
    ],
)
def test_tensorboard_url(environ, api, url):
    assert tensorboard_url(12, environ, lambda: {"name": "alice"}, api) == url


def test_tensorboard_url_unknown_server():
    with pytest.raises(ValueError, match="cannot tell where your notebook server is"):
        tensorboard_url(12, {}, lambda: {"name": "alice"}, "http://127.0.0.1:9000/api/v1")


def test_cell_spec():
    assert cell_spec("/w/.yitong/cells/ab.py", vc="vision", name="cell-ab") == {
        "name": "cell-ab",
        "vc": "vision",
        "environment": {"kernel": "python3"},
        "command": ["python", "/w/.yitong/cells/ab.py"],
    }
    spec = cell_spec(
        "s.py",
        vc="nlp",
        name="ddp",
        procs=2,
        cpu="2",
        memory="4Gi",
        accelerator=accelerator(1, None),
        env=parse_pairs(["A=1"], "--env"),
        inputs=inputs(["vision/mnist@3:data", "vision/x"]),
        max_run_time="1h",
        priority="high",
        retries=1,
        kernel=None,
        image="img:1",
    )
    assert spec == {
        "name": "ddp",
        "vc": "nlp",
        "environment": {"image": "img:1"},
        "command": ["python", "s.py"],
        "framework": "pytorch",
        "procs_per_node": 2,
        "cpu": "2",
        "memory": "4Gi",
        "accelerator": {"type": "nvidia.com/gpu", "count": 1},
        "env": {"A": "1"},
        "inputs": [{"dataset": "vision/mnist@3", "mount": "data"}, {"dataset": "vision/x"}],
        "max_run_time": "1h",
        "priority": "high",
        "retries": 1,
    }
    assert cell_spec("s.py", vc="v", name="n", procs=4, framework="mpi")["framework"] == "mpi"
    assert accelerator(None, "huawei.com/Ascend910=2") == {"type": "huawei.com/Ascend910", "count": 2}
    assert accelerator(None, "huawei.com/Ascend910") == {"type": "huawei.com/Ascend910", "count": 1}
    with pytest.raises(ValueError, match="TYPE=COUNT"):
        accelerator(None, "x=two")


@pytest.mark.parametrize(
    "given, env_vc, vcs, expected",
    [
        ("nlp", "vision", ["a", "b"], "nlp"),
        (None, "vision", ["a", "b"], "vision"),
        (None, None, ["only"], "only"),
        (None, None, ["a", "b"], ValueError("you are in VCs a, b: choose one with --vc")),
        (None, None, [], ValueError("you are in no VC")),
    ],
)
def test_default_vc(monkeypatch, given, env_vc, vcs, expected):
    monkeypatch.delenv("YITONG_VC", raising=False)
    if env_vc:
        monkeypatch.setenv("YITONG_VC", env_vc)
    if isinstance(expected, Exception):
        with pytest.raises(ValueError, match=str(expected)):
            default_vc(given, lambda: {"vcs": vcs})
    else:
        assert default_vc(given, lambda: {"vcs": vcs}) == expected


def test_tables():
    now = datetime(2026, 1, 2, 3, 10, 5, tzinfo=UTC)
    base = {"name": "train", "vc": "vision", "user": "alice", "exit_code": None, "created": "2026-01-02T03:04:05+00:00"}
    jobs = [
        {**base, "id": 12, "state": "queued", "reason": "waiting: VC vision: 8 of 8 cpu in use", "position": 2},
        {
            **base,
            "id": 11,
            "state": "failed",
            "reason": "process 9 vanished",
            "exit_code": 3,
            "created": "2026-01-01T03:04:05Z",
        },
        {**base, "id": 10, "state": "running", "reason": "", "created": "2026-01-02T03:10:00+00:00"},
    ]
    assert (
        job_tables.jobs_table(jobs, now)
        == """\
ID  NAME   VC      USER   STATE    POSITION/REASON                           AGE
12  train  vision  alice  queued   #2 waiting: VC vision: 8 of 8 cpu in use  6m
11  train  vision  alice  failed   exit code 3; process 9 vanished           1d
10  train  vision  alice  running  -                                         5s"""
    )


RUN = {
    "run": 7,
    "job": 12,
    "name": "train",
    "vc": "vision",
    "user": "alice",
    "attempt": 1,
    "backend": "local",
    "spec": {},
    "parameters": {
        "command": ["python", "train.py", "--lr", "0.1"],
        "framework": "plain",
        "nodes": 1,
        "procs_per_node": None,
        "accelerator": None,
        "cpu": 1,
        "memory": "2Gi",
        "env": {},
        "retries": 0,
        "outputs": "outputs",
    },
    "inputs": [{"dataset": "vision/mnist@latest", "mount": "mnist", "version": 3, "manifest": "6f1c" * 16}],
    "code": {"commit": "a" * 40, "dirty_hash": "blake3:" + "b" * 8, "path": "/home/alice/proj"},
    "environment": {
        "image": None,
        "digest": None,
        "kernel": "python3",
        "python": "/srv/venv/bin/python",
        "python_version": "3.11.2",
        "pip_freeze_sha256": "c" * 64,
        "packages": 210,
    },
    "devices": {
        "accelerator": None,
        "visible": [],
        "driver": None,
        "cpu_model": "AMD EPYC",
        "host": "node1",
        "machine": "x86_64",
        "kernel": "6.1.0",
    },
    "started": "2026-01-02T03:04:05+00:00",
    "finished": "2026-01-02T03:05:15+00:00",
    "state": "succeeded",
    "exit_code": 0,
    "metrics": {"loss": 0.1, "acc": 0.987654321},
    "artifacts": [{"path": "model.pt", "size": 1234, "blake3": "d" * 64}],
}

RUN_TEXT = f"""\
run:          7 (job 12 train, attempt 1)
vc:           vision
user:         alice
state:        succeeded (exit code 0)
started:      2026-01-02 03:04
finished:     2026-01-02 03:05
duration:     1:10
backend:      local
code:         commit {"a" * 40}, uncommitted changes blake3:bbbbbbbb in /home/alice/proj
environment:  kernel python3; python 3.11.2 (/srv/venv/bin/python); 210 packages, pip freeze sha256 cccccccccccccccc
devices:      no accelerator; node1; AMD EPYC; x86_64; kernel 6.1.0

DATASET              MOUNT  VERSION  MANIFEST
vision/mnist@latest  mnist  v3       6f1c6f1c6f1c6f1c

PARAMETER  VALUE
command    python train.py --lr 0.1
framework  plain
nodes      1
cpu        1
memory     2Gi
retries    0
outputs    outputs

METRIC  VALUE
acc     0.9877
loss    0.1

ARTIFACT  SIZE      BLAKE3
model.pt  1.21 KiB  dddddddddddddddd
"""


def test_run_show_and_rerun(yt_env, capsys, monkeypatch):
    """Times in the local zone to the minute, measured floats to 4 digits; --json exact."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    job = yt_env.jobs.add(state="succeeded")
    yt_env.jobs.runs[7] = {**RUN, "job": job["id"], "spec": job["spec"]}
    assert run(["run", "show", "7"]) == 0
    assert capsys.readouterr().out == RUN_TEXT.replace("job 12", f"job {job['id']}")
    assert run(["run", "show", "7", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == {"loss": 0.1, "acc": 0.987654321}
    assert run(["run", "rerun", "7"]) == 0
    assert capsys.readouterr().out.startswith("rerun of run 7: submitted job 2 (train) in VC vision: queued")


def test_run_show_empty_record():
    text = job_tables.run_details({"run": 3, "job": 1, "name": "x", "attempt": 1, "state": "running"})
    assert "datasets:  none" in text and "metrics:   none (a job records them with yitong_lab.log_metrics)" in text
    assert "code:         -" in text and "artifacts: none" in text


# -- the commands against the stand-in -------------------------------------------------------------


def test_submit_records_code_of_the_working_directory(yt_env, repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    (repo / "train.py").write_text("print('changed')\n")
    assert run(["job", "submit", "spec.yaml"]) == 0
    assert capsys.readouterr().out == (
        "submitted job 1 (train) in VC vision: queued, #1 waiting: VC vision: 8 of 8 cpu in use\n"
    )
    ctype, body, query = yt_env.jobs.received[-1]
    assert ctype == "application/json" and query == {}
    assert body["code"]["commit"] == git(repo, "rev-parse", "HEAD")
    assert body["code"]["dirty_hash"].startswith("blake3:") and body["code"]["path"] == str(repo.resolve())


def test_submit_options(yt_env, repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run(["job", "submit", str(repo / "spec.yaml"), "--dir", str(repo), "--vc", "default", "--json"]) == 0
    job = json.loads(capsys.readouterr().out)
    assert (job["vc"], job["code"]["path"]) == ("default", str(repo.resolve()))
    assert yt_env.jobs.received[-1][2] == {"vc": "default"}
    assert run(["job", "submit", str(repo / "spec.yaml"), "--no-code"]) == 0
    assert yt_env.jobs.received[-1][:2] == (
        "application/yaml",
        {"name": "train", "vc": "vision", "environment": {"kernel": "python3"}, "command": ["python", "train.py"]},
    )
    openpai = tmp_path / "pai.yaml"
    openpai.write_text(
        "protocolVersion: 2\nname: Pai_Job\ntype: job\ndefaults: {virtualCluster: vision}\n"
        "taskRoles: {main: {commands: [echo hi]}}\n"
    )
    assert run(["job", "submit", "--from", "openpai", str(openpai)]) == 0
    assert "submitted job 3 (pai-job)" in capsys.readouterr().out
    assert yt_env.jobs.received[-1][0] == "application/yaml" and yt_env.jobs.received[-1][2] == {"from": "openpai"}


@pytest.mark.parametrize(
    "argv, code, err",
    [
        (["job", "submit"], 2, "yt: give a spec file"),
        (["job", "submit", "missing.yaml"], 2, "yt: missing.yaml: no such spec file\n"),
        (["job", "submit", "spec.yaml", "--procs", "2"], 2, "yt: --procs: only for %%yt job submit cells"),
        (["job", "submit", "bad.yaml"], 1, "yt: spec: not valid YAML or JSON at line 2, column 1\n"),
        (["job", "submit", "spec.yaml", "--vc", "nope"], 1, "yt: there is no VC nope\n"),
        (["job", "show", "x"], 2, "argument ID: invalid int value: 'x'"),
        (["job", "clone", "1", "--set", "cpu"], 2, "yt: --set 'cpu': expected NAME=VALUE\n"),
    ],
)
def test_submit_refusals(yt_env, repo, monkeypatch, capsys, argv, code, err):
    monkeypatch.chdir(repo)
    (repo / "bad.yaml").write_text("name: [unclosed\n")
    assert run(argv) == code
    captured = capsys.readouterr()
    assert err in captured.err and captured.out == ""


def test_ls_show_cancel_retry_clone(yt_env, capsys):
    yt_env.jobs.add(
        state="running",
        spec={"name": "mine"},
        hosts=["node1"],
        ports={"master": 29500},
        devices={"type": "nvidia.com/gpu", "count": 1, "visible": [0]},
        logs={0: b"x", 1: b"y"},
        code={"commit": "ab" * 20, "dirty_hash": None, "path": "/home/alice/proj"},
    )
    yt_env.jobs.add(user="carol", spec={"name": "theirs"})
    assert run(["job", "ls"]) == 0
    out = capsys.readouterr().out
    assert "mine" in out and "theirs" not in out and out.startswith("ID  NAME")
    assert run(["job", "ls", "--all", "--state", "queued"]) == 0
    assert "theirs" in (out := capsys.readouterr().out) and "mine" not in out
    assert run(["job", "show", "1"]) == 0
    shown = capsys.readouterr().out
    for line in [
        "job:        1 (mine)",
        "state:      running",
        "hosts:      node1",
        "ports:      master=29500",
        "devices:    nvidia.com/gpu x1 (visible 0)",
        "access:     local processes on testhost, process group 4242",
        f"code:       commit {'ab' * 20}, clean in /home/alice/proj",
        "ranks:      0, 1  (yt job logs 1 --rank N)",
        "command:    python train.py",
        "resources:  1 node x (1 cpu, 2Gi), plain",
    ]:
        assert line in shown, line
    assert run(["job", "cancel", "1"]) == 0
    assert capsys.readouterr().out == "job 1: cancel requested (running; cancelled when its processes end)\n"
    assert run(["job", "cancel", "2"]) == 1
    assert capsys.readouterr().err == "yt: alice may not cancel job 2 of carol\n"
    yt_env.jobs.jobs[1]["state"] = "cancelled"
    assert run(["job", "retry", "1"]) == 0
    assert capsys.readouterr().out == "job 1 queued again (attempt 2)\n"
    assert run(["job", "clone", "1", "--set", "cpu=2", "--env", "LR=0.1"]) == 0
    assert capsys.readouterr().out.startswith("cloned job 1 as job 3 (mine) in VC vision: queued")
    assert yt_env.jobs.received[-1][1] == {"patch": {"cpu": 2, "env": {"LR": "0.1"}}}
    assert yt_env.jobs.jobs[3]["spec"]["cpu"] == 2


def test_logs(yt_env, capsys):
    job = yt_env.jobs.add(state="running", logs={0: b"rank zero\n", 1: b"rank one\n"})
    assert run(["job", "logs", str(job["id"]), "--rank", "1"]) == 0
    assert capsys.readouterr().out == "rank one\n"
    assert run(["job", "logs", str(job["id"])], client=None) == 0
    assert capsys.readouterr().out == "rank zero\n"


def test_logs_follow_shows_states_on_stderr(yt_env, capsys):
    job = yt_env.jobs.add(state="running", logs={0: b"epoch 1\n"}, pending=[b"epoch 2\n"], end="failed")
    assert run(["job", "logs", str(job["id"]), "--follow"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "epoch 1\nepoch 2\n"
    assert captured.err == "job 1 (train): running\njob 1 (train): failed (exit code 1)\n"


def test_logs_refused_for_another_vc(yt_env, yt):
    job = yt_env.jobs.add(state="running", logs={0: b"secret\n"})
    for verb in ("logs", "cancel", "show"):
        result = yt("job", verb, str(job["id"]), token="bob-token")
        assert (result.returncode, result.stdout, result.stderr) == (1, "", f"yt: there is no job {job['id']}\n")


def test_submit_follow_until_it_ends(yt_env, repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    yt_env.jobs.autostart = ([b"step 1\n", b"done\n"], "succeeded")
    assert run(["job", "submit", "spec.yaml", "--follow"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("submitted job 1 (train) in VC vision: queued")
    assert captured.out.endswith("step 1\ndone\n")
    assert "job 1 (train): running\n" in captured.err and captured.err.endswith(
        "job 1 (train): succeeded (exit code 0)\n"
    )
    yt_env.jobs.autostart = ([b"boom\n"], "failed")
    assert run(["job", "submit", "spec.yaml", "-f"]) == 1
    assert capsys.readouterr().err.endswith("yt: job 2 (train): failed (exit code 1)\n")


def test_tensorboard_prints_the_route(yt_env, monkeypatch, capsys):
    job = yt_env.jobs.add(state="running")
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/alice/")
    monkeypatch.delenv("JUPYTERHUB_PUBLIC_URL", raising=False)
    assert run(["job", "tensorboard", str(job["id"])]) == 0
    assert capsys.readouterr().out == f"/user/alice/yitong/jobs/{job['id']}/tensorboard\n"
    assert run(["job", "tensorboard", "99"]) == 1
    assert capsys.readouterr().err == "yt: there is no job 99\n"


# -- magics ------------------------------------------------------------------------------------------


def ipython(*lines, cwd=None, **env):
    return run_ipython(*lines, cwd=cwd, drop=("YITONG_VC",), **env)


def test_line_magic_is_the_same_grammar(yt_env, yt):
    yt_env.jobs.add(state="running", spec={"name": "mine"})
    cli = yt("job", "ls", "--json")
    magic = ipython("%yt job ls --json")
    assert magic.returncode == 0, magic.stderr
    assert json.loads(magic.stdout) == json.loads(cli.stdout)
    assert json.loads(cli.stdout)[0]["name"] == "mine"


def test_cell_magic_submits_the_cell(yt_env, repo):
    cell = "import yitong_lab\nyitong_lab.log_metrics(loss=0.1)\nprint('from the cell')"
    result = ipython(f"%%yt job submit --vc vision --name cellj --procs 2 --env LR=0.1\n{cell}", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "submitted job 1 (cellj) in VC vision: queued, #1 waiting: VC vision: 8 of 8 cpu in use\n"
    ctype, body, _query = yt_env.jobs.received[-1]
    (script,) = list((repo / ".yitong" / "cells").glob("*.py"))
    assert script.read_text() == cell + "\n"
    assert body["command"] == ["python", str(script)]
    assert (body["framework"], body["procs_per_node"], body["env"]) == ("pytorch", 2, {"LR": "0.1"})
    assert body["environment"] == {"kernel": "python3"}
    # the saved cell is an untracked file: part of the recorded code
    assert body["code"]["commit"] == git(repo, "rev-parse", "HEAD") and body["code"]["dirty_hash"]
    assert body["code"]["path"] == str(repo.resolve())


def test_cell_magic_default_vc_and_refusals(yt_env, repo):
    # alice is in two VCs: --vc is needed (or YITONG_VC, the VC the server runs in)
    result = ipython("%%yt job submit\nprint(1)", cwd=repo)
    assert "yt: you are in VCs default, vision: choose one with --vc" in result.stderr
    result = ipython("%%yt job submit --dry-run\nprint(1)", cwd=repo, YITONG_VC="vision")
    assert json.loads(result.stdout)["vc"] == "vision" and yt_env.jobs.received == []
    result = ipython("%%yt vc ls\nprint(1)", "print('still here')")
    assert "yt: %%yt takes a cell only for `job submit`" in result.stderr
    result = ipython("%%yt job submit spec.yaml --vc vision\nprint(1)", cwd=repo)
    assert "give options, not a spec file" in result.stderr
    result = ipython("%%yt job submit --vc vision\n\n", cwd=repo)
    assert "the cell is empty" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "job, line",
    [
        ({"state": "running", "reason": ""}, "job 1 (x): running"),
        (
            {"state": "queued", "position": 2, "reason": "waiting: VC vision: 8 of 8 cpu in use"},
            "job 1 (x): queued (#2; waiting: VC vision: 8 of 8 cpu in use)",
        ),
        ({"state": "failed", "exit_code": 1, "reason": "exit code 1"}, "job 1 (x): failed (exit code 1)"),
        (
            {"state": "failed", "exit_code": 137, "reason": "max_run_time of 60s exceeded"},
            "job 1 (x): failed (exit code 137; max_run_time of 60s exceeded)",
        ),
        ({"state": "cancelled", "exit_code": -15, "reason": "cancelled"}, "job 1 (x): cancelled (exit code -15)"),
        ({"state": "succeeded", "exit_code": 0, "reason": ""}, "job 1 (x): succeeded (exit code 0)"),
    ],
)
def test_state_line(job, line):
    from yitong_lab.jobs.follow import state_line

    assert state_line({"id": 1, "name": "x", **job}) == line


def test_submit_fills_the_vc_and_environment_as_the_cell_magic_does(yt_env, repo, monkeypatch, capsys):
    """A spec file without ``vc`` takes ``$YITONG_VC`` (the server's VC), without ``environment``
    the python3 kernel; a spec that has both is sent as the person wrote it."""
    monkeypatch.chdir(repo)
    (repo / "bare.yaml").write_text("name: bare\ncommand: [python, train.py]\n")
    monkeypatch.setenv("YITONG_VC", "vision")
    assert run(["job", "submit", "bare.yaml", "--no-code"]) == 0
    ctype, body, _query = yt_env.jobs.received[-1]
    assert ctype == "application/json"
    assert body == {
        "name": "bare",
        "command": ["python", "train.py"],
        "vc": "vision",
        "environment": {"kernel": "python3"},
    }
    assert run(["job", "submit", "bare.yaml", "--no-code", "--vc", "default"]) == 0
    assert "vc" not in yt_env.jobs.received[-1][1] and yt_env.jobs.received[-1][2] == {"vc": "default"}
    assert run(["job", "submit", "spec.yaml", "--no-code"]) == 0
    assert yt_env.jobs.received[-1][0] == "application/yaml"
    capsys.readouterr()


@pytest.mark.parametrize(
    "typed, verb",
    [
        (["job", "list"], "ls"),
        (["data", "list"], "ls"),
        (["vc", "list"], "ls"),
        (["job", "get", "1"], "show"),
        (["job", "describe", "1"], "show"),
        (["job", "log", "1"], "logs"),
        (["job", "stop", "1"], "cancel"),
        (["vc", "delete", "x", "--yes"], "rm"),
        (["ssh-key", "delete", "1"], "remove"),
    ],
)
def test_common_verb_aliases(typed, verb):
    """What people type from kubectl, docker or git reaches the verb; the aliases stay out of --help."""
    from yitong_lab.cli.grammar import build_parser

    parser = build_parser()
    canonical = [*typed[:1], verb, *typed[2:]]
    if typed[0] == "ssh-key":
        canonical = ["ssh-key", "remove", *typed[2:]]
    assert parser.parse_args(typed).func is parser.parse_args(canonical).func
    noun = parser._subparsers._group_actions[0].choices[typed[0]]  # type: ignore[union-attr]
    listed = [a.dest for action in noun._subparsers._group_actions for a in action._choices_actions]
    assert verb in listed and typed[1] not in listed
