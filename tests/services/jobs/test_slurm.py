"""The Slurm batch script, QOS limits and sacctmgr commands; squeue/jobcomp parsing and the state
mapping of the Slurm runner: literal scripts and texts, `bash -n`, hostile values stay inert."""

import json
import shlex
import subprocess
from datetime import datetime

import pytest

from yitong_services.core.accounts import Account
from yitong_services.core.settings import Settings
from yitong_services.jobs.devices import BuildError
from yitong_services.jobs.runner_slurm import (
    SlurmJob,
    SlurmSettings,
    access_text,
    classify,
    expand_hostlist,
    parse_jobcomp,
    parse_squeue,
    sbatch_argv,
)
from yitong_services.jobs.slurm import RANK_SHIM, batch_script, qos_grptres, sacctmgr_commands, slurm_time
from yitong_services.jobs.spec import spec_from_dict

GI = 2**30
BASE = {"name": "mnist", "vc": "vision", "environment": {"image": "x"}, "command": ["python", "train.py"]}
HOSTILE = [
    "; rm -rf /",
    "$(touch /tmp/pwned)",
    "`id`",
    'it\'s "quoted"',
    "line1\nline2",
    "$HOME ${PATH}",
    "*",
    "--x=$head",
]


def test_script_literal():
    spec = spec_from_dict(
        {
            **BASE,
            "framework": "pytorch",
            "nodes": 2,
            "cpu": 8,
            "memory": "32Gi",
            "accelerator": {"type": "nvidia.com/gpu", "count": 4},
            "max_run_time": "1h30m",
            "env": {"NCCL_DEBUG": "INFO"},
            "inputs": [{"dataset": "vision/mnist@3"}],
        }
    )
    script = batch_script(
        spec,
        42,
        "vision",
        "yt-vision",
        "gpu",
        "/data/jobs/42",
        {"mnist": "/data/materialized/ab"},
        attempt_dir="/data/jobs/42/attempt-1",
        cwd="/home/alice/my code",
    )
    assert (
        script
        == """#!/bin/bash
#SBATCH --job-name=yt-42-mnist
#SBATCH --account=vision
#SBATCH --qos=yt-vision
#SBATCH --partition=gpu
#SBATCH --chdir=/data/jobs/42
#SBATCH --output=/data/jobs/42/attempt-1/slurm-%j.out
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32768M
#SBATCH --gres=gpu:4
#SBATCH --time=0-01:30:00
set -euo pipefail
yitong_exit() {
  local rc=$? reason=
  [ -z "${yitong_signal:-}" ] || reason="stopped by SIG$yitong_signal"
  printf '{"exit_code": %d, "end": "%s", "reason": "%s"}\\n' "$rc" "$(date -u +%Y-%m-%dT%H:%M:%S.%6N+00:00)" \
"$reason" >/data/jobs/42/attempt-1/exit.tmp
  mv -f -- /data/jobs/42/attempt-1/exit.tmp /data/jobs/42/attempt-1/exit
}
trap yitong_exit EXIT
trap 'yitong_signal=TERM; exit 143' TERM
trap 'yitong_signal=INT; exit 130' INT
export NCCL_DEBUG=INFO
export YITONG_JOB_ID=42
export YITONG_JOB_NAME=mnist
export YITONG_VC=vision
export YITONG_NNODES=2
export YITONG_NPROC_PER_NODE=4
export YITONG_MASTER_PORT=29500
export YITONG_DIST_BACKEND=nccl
export YITONG_OUTPUT_DIR=/data/jobs/42/outputs
export YITONG_INPUT_MNIST=/data/materialized/ab
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export YITONG_MASTER_ADDR="$head"
YITONG_HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -)
export YITONG_HOSTS
mkdir -p -- "$YITONG_OUTPUT_DIR" /data/jobs/42/attempt-1/logs
cd -- '/home/alice/my code'
srun --kill-on-bad-exit=1 --nodes=2 --ntasks-per-node=1 --output=/data/jobs/42/attempt-1/logs/node-%n.log \
bash -c 'export YITONG_NODE_RANK="$SLURM_NODEID"; exec "$@"' yitong-node \
torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-id="$SLURM_JOB_ID" \
--rdzv-endpoint="$head:29500" --no-python \
bash -c 'exec "$@" >>"$0/rank-$RANK.log" 2>&1' /data/jobs/42/attempt-1/logs python train.py
""".replace("\\\n", "")
    )


@pytest.mark.parametrize(
    "change,lines",
    [
        ({}, ["#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=2048M"]),
        (
            {"framework": "mpi", "procs_per_node": 4, "cpu": 8},
            ["#SBATCH --ntasks-per-node=4", "#SBATCH --cpus-per-task=2"],
        ),
        ({"accelerator": {"type": "huawei.com/Ascend910", "count": 8}}, ["#SBATCH --gres=npu:8"]),
        ({"priority": "low"}, ["#SBATCH --nice=100"]),
        ({"max_run_time": "2d"}, ["#SBATCH --time=2-00:00:00"]),
        (
            {"command": "python a.py && python b.py"},
            ["\nbash -c 'python a.py && python b.py' >/w/logs/rank-0.log 2>&1 </dev/null\n"],
        ),
        ({"command": "python a.py", "nodes": 2}, ["yitong-node bash -c 'python a.py'\n"]),
        # one node: the batch step runs the program itself, logging as rank 0
        (
            {},
            [
                "\nexport YITONG_NODE_RANK=0\npython train.py >/w/logs/rank-0.log 2>&1 </dev/null\n",
                "#SBATCH --output=/w/slurm-%j.out",
            ],
        ),
        (
            {"framework": "pytorch", "procs_per_node": 2},
            [
                '\ntorchrun --standalone --nnodes=1 --nproc-per-node=2 --no-python bash -c \'exec "$@" >>"$0/rank-$RANK.log" 2>&1\''
                " /w/logs python train.py >/w/logs/node-0.log 2>&1 </dev/null\n"
            ],
        ),
        # several nodes, or MPI: srun, one log per task
        (
            {"nodes": 3},
            ["\nsrun --kill-on-bad-exit=1 --nodes=3 --ntasks-per-node=1 --output=/w/logs/rank-%t.log bash -c "],
        ),
        (
            {"framework": "mpi", "procs_per_node": 4},
            ["srun --kill-on-bad-exit=1 --nodes=1 --ntasks-per-node=4 --output=/w/logs/rank-%t.log"],
        ),
    ],
)
def test_script_options(change, lines):
    script = batch_script(spec_from_dict({**BASE, **change}), 1, workdir="/w")
    for line in lines:
        assert line in script, line
    assert "--account" not in script and "--qos" not in script and "--partition" not in script


def _bash_n(script: str) -> None:
    done = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr


def _user_words(script: str) -> str:
    """The text after the launcher on the script's last line: the user's quoted argv (and the redirection
    of a one-node job)."""
    marker = "yitong-node " if "yitong-node " in script else "\nexport YITONG_NODE_RANK=0\n"
    return script.rstrip("\n").split(marker, 1)[1]


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_are_inert(value, nodes):
    spec = spec_from_dict(
        {
            **BASE,
            "framework": "pytorch",
            "nodes": nodes,
            "command": ["python", "train.py", value],
            "env": {"EVIL": value},
        }
    )
    script = batch_script(spec, 9, workdir="/w")
    _bash_n(script)
    export = next(line for line in script.split("export EVIL=", 1)[1:])
    # the export line (possibly spanning lines) parses back to exactly the value, as one word
    words = shlex.split("EVIL=" + export.split("\nexport YITONG_JOB_ID=")[0])
    assert words == ["EVIL=" + value]
    after = _user_words(script).split("--no-python ", 1)[1].removesuffix(" >/w/logs/node-0.log 2>&1 </dev/null")
    assert shlex.split(after) == ["bash", "-c", RANK_SHIM, "/w/logs", "python", "train.py", value]
    # bash itself sees the argv unchanged: run the rank shim's words with the user's program replaced by printf
    probe = "printf '%s\\0' " + after.split("/w/logs ", 1)[1]
    done = subprocess.run(["bash", "-c", probe], capture_output=True, timeout=20)
    assert done.stdout.split(b"\0")[:-1] == [b"python", b"train.py", value.encode()]


def test_rank_shim_logs_per_rank(tmp_path):
    """What torchrun runs per process: the program's stdout and stderr land in rank-$RANK.log."""
    for rank in ("0", "1"):
        argv = ["bash", "-c", RANK_SHIM, str(tmp_path), "bash", "-c", 'echo "out $1"; echo "err $1" >&2', "x", "a b"]
        subprocess.run(argv, env={"RANK": rank, "PATH": "/usr/bin:/bin"}, check=True, timeout=20)
        assert (tmp_path / f"rank-{rank}.log").read_text() == "out a b\nerr a b\n"


@pytest.mark.parametrize(
    "tail,record",
    [
        ("exit 0", {"exit_code": 0, "reason": ""}),
        ("false", {"exit_code": 1, "reason": ""}),
        ("(exit 7)", {"exit_code": 7, "reason": ""}),
        ("kill -TERM $$; sleep 5", {"exit_code": 143, "reason": "stopped by SIGTERM"}),
    ],
)
def test_exit_record(tmp_path, tail, record):
    """The script's trap writes the same record as the local wrapper, whatever ends the script."""
    spec = spec_from_dict({**BASE, "command": ["true"]})
    script = batch_script(spec, 3, workdir=str(tmp_path))
    head = script.split("\nexport ", 1)[0]  # up to the traps: the rest needs Slurm
    subprocess.run(["bash", "-c", head + "\n" + tail], timeout=20)
    got = json.loads((tmp_path / "exit").read_text())
    assert datetime.fromisoformat(got.pop("end")).tzinfo is not None
    assert got == record
    assert not (tmp_path / "exit.tmp").exists()


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_shell_command_is_one_word(value, nodes):
    script = batch_script(spec_from_dict({**BASE, "nodes": nodes, "command": f"echo {value}"}), 9, workdir="/w")
    _bash_n(script)
    words = _user_words(script).removesuffix(" >/w/logs/rank-0.log 2>&1 </dev/null")
    assert shlex.split(words) == ["bash", "-c", f"echo {value}"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"account": "vision;id"}, "Slurm account 'vision;id'"),
        ({"qos": "a b"}, "Slurm QOS 'a b'"),
        ({"partition": "$(id)"}, "Slurm partition '$(id)'"),
        ({"workdir": "/tmp/a b"}, "job directory '/tmp/a b'"),
        ({"workdir": "relative"}, "job directory 'relative'"),
        ({"workdir": "/tmp/../etc"}, "job directory '/tmp/../etc'"),
        ({"workdir": "/tmp/%j"}, "job directory '/tmp/%j'"),
        ({"attempt_dir": "/w/a b"}, "attempt directory '/w/a b'"),
        ({"attempt_dir": "/w/./x"}, "attempt directory '/w/./x'"),
        ({"job_id": "1;id"}, "job id '1;id'"),
    ],
)
def test_refusals(kwargs, message):
    kwargs = {"job_id": 1, "workdir": "/w", **kwargs}
    with pytest.raises(BuildError, match=message.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")):
        batch_script(spec_from_dict(BASE), **kwargs)


@pytest.mark.parametrize(
    "quota,text",
    [
        ({"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2}, "cpu=8,mem=16384M,gres/gpu=2"),
        ({"cpu": 0.5, "memory": 512 * 2**20}, "cpu=1,mem=512M"),
        ({"huawei.com/Ascend910": 8, "cpu": 4.0}, "cpu=4,gres/npu=8"),
        ({}, ""),
    ],
)
def test_qos_grptres(quota, text):
    assert qos_grptres(quota) == text


def test_qos_unknown_device():
    with pytest.raises(BuildError, match="does not know how to place amd.com/gpu"):
        qos_grptres({"amd.com/gpu": 1})


@pytest.mark.parametrize("seconds,text", [(60, "0-00:01:00"), (5400, "0-01:30:00"), (90061, "1-01:01:01")])
def test_slurm_time(seconds, text):
    assert slurm_time(seconds) == text


def test_sacctmgr_commands():
    vcs = {"vision": {"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2}, "nlp": {}}
    assert sacctmgr_commands(vcs, ["yitong"], qos="yt-{vc}") == [
        ["sacctmgr", "-i", "add", "qos", "yt-nlp"],
        ["sacctmgr", "-i", "add", "account", "nlp", "Description=Yitong VC nlp", "Organization=yitong"],
        ["sacctmgr", "-i", "modify", "account", "where", "name=nlp", "set", "QOS=yt-nlp", "DefaultQOS=yt-nlp"],
        ["sacctmgr", "-i", "add", "user", "yitong", "Account=nlp"],
        ["sacctmgr", "-i", "add", "qos", "yt-vision"],
        ["sacctmgr", "-i", "modify", "qos", "where", "name=yt-vision", "set", "GrpTRES=cpu=8,mem=16384M,gres/gpu=2"],
        ["sacctmgr", "-i", "add", "account", "vision", "Description=Yitong VC vision", "Organization=yitong"],
        ["sacctmgr", "-i", "modify", "account", "where", "name=vision", "set", "QOS=yt-vision", "DefaultQOS=yt-vision"],
        ["sacctmgr", "-i", "add", "user", "yitong", "Account=vision"],
    ]
    assert sacctmgr_commands({"cv": {"cpu": 1.0}}, [], account="lab-{vc}", qos="q{vc}")[2][4] == "lab-cv"
    with pytest.raises(BuildError, match="Slurm user 'a b'"):
        sacctmgr_commands({"cv": {}}, ["a b"])


# ---- the runner's parsing and state mapping (runner_slurm), against literal text ----

SQUEUE = """\
101|PENDING||Resources
102|RUNNING|n[01-02]|None
103|COMPLETING|n03|None
104|COMPLETED|n03|None
105|TIMEOUT|n04|None
106|CANCELLED|n04|None
107|PENDING||launch failed requeued held
"""

JOBCOMP = (
    "JobId=7 UserId=root(0) GroupId=root(0) Name=yt-3-a JobState=COMPLETED Partition=debug TimeLimit=UNLIMITED "
    "StartTime=2026-01-01T00:00:00 EndTime=2026-01-01T00:00:05 NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/old/jobs/3 "
    "ReservationName= Tres=cpu=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=x EligibleTime=x "
    "DerivedExitCode=0:0 ExitCode=0:0 \n"
    "JobId=8 UserId=root(0) GroupId=root(0) Name=yt-4-b JobState=OUT_OF_MEMORY Partition=debug TimeLimit=2 "
    "StartTime=2026-01-02T00:00:00 EndTime=2026-01-02T00:01:00 NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/d/jobs/4 "
    "ReservationName= Tres=cpu=1 Account=v QOS= WcKey= Cluster=unknown SubmitTime=x EligibleTime=x "
    "DerivedExitCode=0:0 ExitCode=0:9 \n"
    "JobId=7 UserId=root(0) GroupId=root(0) Name=yt-3-a JobState=NODE_FAIL Partition=debug TimeLimit=UNLIMITED "
    "StartTime=2026-01-03T00:00:00 EndTime=2026-01-03T00:00:09 NodeList=n1 NodeCnt=1 ProcCnt=1 WorkDir=/d/jobs/3 "
    "ReservationName= Tres=cpu=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=x EligibleTime=x "
    "DerivedExitCode=0:0 ExitCode=1:0 \n"
)


def test_parse_squeue():
    jobs = parse_squeue(SQUEUE)
    assert jobs["101"] == SlurmJob("PENDING", "", "Resources")
    assert jobs["102"] == SlurmJob("RUNNING", "n[01-02]", "None")
    assert jobs["107"].reason == "launch failed requeued held"
    assert parse_squeue("") == {} and parse_squeue("garbage\n") == {}


@pytest.mark.parametrize(
    "slurm_id,workdir,expected",
    [
        ("7", "/d/jobs/3", SlurmJob("NODE_FAIL", exit_code=1, end="2026-01-03T00:00:09")),  # the later run, in our dir
        ("7", "/old/jobs/3", SlurmJob("COMPLETED", exit_code=0, end="2026-01-01T00:00:05")),
        ("8", "/d/jobs/4", SlurmJob("OUT_OF_MEMORY", exit_code=137, end="2026-01-02T00:01:00")),  # signal 9
        ("8", "/elsewhere", None),
        ("70", "/d/jobs/3", None),
    ],
)
def test_parse_jobcomp(slurm_id, workdir, expected):
    assert parse_jobcomp(JOBCOMP, slurm_id, workdir) == expected


@pytest.mark.parametrize(
    "text,hosts",
    [
        ("localhost", ["localhost"]),
        ("n[01-03]", ["n01", "n02", "n03"]),
        ("n[1-2,5],gpu7", ["n1", "n2", "n5", "gpu7"]),
        ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
        ("", []),
        ("odd[x-y]", ["odd[x-y]"]),
    ],
)
def test_expand_hostlist(text, hosts):
    assert expand_hostlist(text) == hosts


OK = {"exit_code": 0, "end": "2026-01-01T00:00:01+00:00", "reason": ""}
RC3 = {"exit_code": 3, "end": "2026-01-01T00:00:01+00:00", "reason": ""}
TERM = {"exit_code": 143, "end": "2026-01-01T00:00:01+00:00", "reason": "stopped by SIGTERM"}


@pytest.mark.parametrize(
    "job,record,state,code,reason",
    [
        (SlurmJob("PENDING", "", "Priority"), None, "running", None, "waiting in Slurm's queue: Priority"),
        (SlurmJob("PENDING", "", "None"), None, "running", None, "waiting in Slurm's queue"),
        (SlurmJob("RUNNING", "n1"), None, "running", None, ""),
        (SlurmJob("COMPLETING", "n1"), OK, "running", None, ""),  # not over until Slurm says so
        (SlurmJob("COMPLETED", "n1"), OK, "succeeded", 0, ""),
        (None, OK, "succeeded", 0, ""),  # gone from squeue: the record decides
        (SlurmJob("FAILED", "n1"), RC3, "failed", 3, ""),
        (None, RC3, "failed", 3, ""),
        (SlurmJob("TIMEOUT", "n1"), TERM, "failed", 143, "max_run_time exceeded (Slurm TIMEOUT)"),
        (SlurmJob("CANCELLED", "n1"), TERM, "failed", 143, "cancelled in Slurm (scancel)"),
        (None, TERM, "failed", 143, "stopped by SIGTERM"),
        (SlurmJob("CANCELLED"), None, "failed", None, "cancelled in Slurm (scancel)"),  # cancelled while pending
        (SlurmJob("NODE_FAIL", exit_code=1), None, "failed", 1, "a node of the job failed (Slurm NODE_FAIL)"),
        (
            SlurmJob("OUT_OF_MEMORY", exit_code=137),
            None,
            "failed",
            137,
            "out of memory (Slurm OUT_OF_MEMORY): ask for more spec.memory",
        ),
        (SlurmJob("COMPLETED", exit_code=0), None, "succeeded", 0, ""),
        (SlurmJob("FAILED", exit_code=2), None, "failed", 2, "Slurm job 9 ended FAILED without an exit record"),
        (None, None, "vanished", None, "Slurm job 9 is gone without an exit record"),
    ],
)
def test_classify(job, record, state, code, reason):
    polled = classify("9", job, record)
    assert (polled.state, polled.exit_code, polled.reason) == (state, code, reason)


def test_classify_info():
    assert classify("9", SlurmJob("PENDING", "", "Resources"), None).info == {
        "slurm_state": "PENDING",
        "hosts": [],
        "pending": "Resources",
    }
    assert classify("9", SlurmJob("RUNNING", "n[1-2]", "None"), None).info["hosts"] == ["n1", "n2"]
    assert classify("9", None, OK).finished == OK["end"]


def test_access_and_settings(tmp_path):
    assert access_text("12", ["n1", "n2"], tmp_path) == (
        f"Slurm job 12 on n1, n2; `srun --jobid=12 --overlap --pty bash` to get a shell; files under {tmp_path}"
    )
    assert access_text("12", [], tmp_path).startswith("Slurm job 12 (no nodes assigned yet)")
    settings = Settings.model_validate(
        {"backend": "slurm", "backends": {"slurm": {"partition": "debug", "qos": "yt-{vc}"}}}
    )
    config = SlurmSettings.of(settings)
    assert (config.partition, config.account, config.qos, config.bin_dir) == ("debug", "{vc}", "yt-{vc}", "")
    assert config.job_path("/usr/bin").endswith(":/usr/bin")
    assert SlurmSettings(path_prepend=["/opt/a", "/opt/b"]).job_path("/bin") == "/opt/a:/opt/b:/bin"
    bad = Settings.model_validate({"backends": {"slurm": {"partiton": "debug"}}})
    with pytest.raises(ValueError, match="backends.slurm: partiton: Extra inputs are not permitted"):
        SlurmSettings.of(bad)
    assert SlurmSettings.of(None).account == "{vc}"


@pytest.mark.parametrize(
    "account, argv",
    [
        (None, ["sbatch", "--parsable", "/d/slurm-scripts/7-attempt-1.sbatch"]),
        (
            Account("yt-alice", 1001, 1002, "/d/home/alice"),
            ["sbatch", "--parsable", "--uid=1001", "--gid=1002", "/d/slurm-scripts/7-attempt-1.sbatch"],
        ),
    ],
)
def test_sbatch_as_the_owners_account(account, argv):
    assert sbatch_argv("/d/slurm-scripts/7-attempt-1.sbatch", account) == argv


@pytest.mark.parametrize("run_as, ok", [("account", True), ("hub-name", True), ("service", True), ("root", False)])
def test_run_as_setting(run_as, ok):
    settings = Settings.model_validate({"backend": "slurm", "backends": {"slurm": {"run_as": run_as}}})
    if ok:
        assert SlurmSettings.of(settings).run_as == run_as
    else:
        with pytest.raises(ValueError, match="run_as"):
            SlurmSettings.of(settings)
