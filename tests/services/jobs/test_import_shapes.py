"""Imported OpenPAI and PyTorchJob documents, run for real (tests/services/jobs/shapes).

The documents follow the structure of the public examples (microsoft/pai's examples and job
protocol, kubeflow/training-operator's PyTorchJob examples); their commands are made to run on
this machine (CPU, gloo, the checkout's Python). Each importable one is run as the backends run a
job: every node is a process with the platform's ``YITONG_*`` variables (``launch.job_env``),
single-node jobs through the local backend's own launch (``local.local_command``), multi-node
ones as one process per node on loopback, PyTorch through the same torchrun options the
Kubernetes backend uses. Nothing is mocked; the only change is the rendezvous port
(``YITONG_MASTER_PORT``), moved from 29500 to a free one so parallel test runs do not collide.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from yitong_services.jobs.importers import ImportRefused, import_file
from yitong_services.jobs.launch import job_env, user_argv
from yitong_services.jobs.local import local_command
from yitong_services.jobs.spec import Framework

SHAPES = Path(__file__).parent / "shapes"
BIN = os.path.dirname(sys.executable)
TORCHRUN = (sys.executable, "-m", "torch.distributed.run")

#: shape -> ("runs", exit status, text in node 0's output) | ("refused", message) | ("not run", note)
OUTCOMES = {
    "openpai-hello.yaml": ("runs", 0, "hello from hello_world role taskrole task 0\nroles taskrole"),
    "openpai-parameters.yaml": ("runs", 0, "step 3 lr 0.01"),
    "openpai-deployment.yaml": ("runs", 0, "setup ran before the commands"),
    "openpai-data-prerequisite.yaml": ("runs", 0, ""),
    "openpai-cmd-plugin.yaml": ("runs", 0, "started"),
    "openpai-instances.yaml": ("runs", 0, "0 3 127.0.0.1 {p} {p+1},{p+2}"),
    "openpai-master-worker.yaml": ("runs", 0, "chief 0 of 1"),
    "openpai-three-roles.yaml": ("runs", 0, "ps 3 ps,worker,evaluator"),
    "openpai-ddp.yaml": ("runs", 0, "allreduce ok world=2 sum=1"),
    "openpai-failing.yaml": ("runs", 3, "working"),
    "openpai-sleep-infinity.yaml": ("not run", "taskRoles.debug.commands: sleep infinity never ends"),
    "openpai-rocm.yaml": ("not run", "is a ROCm image, so its GPUs are amd.com/gpu"),
    "openpai-marketplace-data.yaml": ("not run", "downloads from the internet (wget https://openpaimarketplace"),
    "openpai-horovod-root.yaml": ("not run", "master-0 is an OpenPAI host name"),
    "pytorchjob-simple.yaml": ("runs", 0, "allreduce ok world=2 sum=1"),
    "pytorchjob-command-args.yaml": ("runs", 0, "allreduce ok world=1 sum=0"),
    "pytorchjob-torchrun.yaml": ("runs", 0, "allreduce ok world=2 sum=1"),
    "pytorchjob-launch-module.yaml": ("runs", 0, "allreduce ok world=1 sum=0 backend=gloo"),
    "pytorchjob-shell.yaml": ("runs", 0, "allreduce ok world=1 sum=0"),
    "pytorchjob-sleep.yaml": ("not run", "sleep infinity never ends"),
    "pytorchjob-cpu-privileged.yaml": ("not run", "resources: no memory given; Yitong's default applies: memory (2Gi)"),
    "pytorchjob-args-only.yaml": ("refused", "no command, only args (--backend gloo); the image's entrypoint"),
    "pytorchjob-rocm-nvidia.yaml": ("refused", "is a ROCm image for AMD GPUs but asks for nvidia.com/gpu"),
}


def _import(name: str):
    return import_file(name.split("-")[0], (SHAPES / name).read_text())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_nodes(spec, workdir: Path, timeout: float = 120, port: int = 0) -> list[subprocess.CompletedProcess]:
    """Every node of ``spec`` as a process here, as a backend starts them; node 0 first in the answer."""
    port = port or _free_port()
    base = {"PATH": os.pathsep.join([BIN, "/usr/bin", "/bin"]), "HOME": str(workdir), "LANG": "C.UTF-8"}
    procs = []
    for rank in range(spec.nodes):
        if spec.nodes == 1:  # the local backend's launch, as it is
            argv, env = local_command(spec, 1, str(workdir), torchrun=TORCHRUN)
        else:
            env = job_env(
                spec,
                1,
                output_dir=str(workdir / spec.outputs),
                input_paths={},
                master_addr="127.0.0.1",
                node_rank=str(rank),
                hosts=["127.0.0.1"] * spec.nodes,
            )
            argv = user_argv(spec)
            if spec.framework is Framework.pytorch:  # the Kubernetes backend's torchrun options
                argv = [
                    *TORCHRUN,
                    f"--nnodes={spec.nodes}",
                    f"--nproc-per-node={spec.procs_per_node}",
                    f"--node-rank={rank}",
                    "--master-addr=127.0.0.1",
                    f"--master-port={port}",
                    "--no-python",
                    *argv,
                ]
        env = {**base, **env, "YITONG_MASTER_PORT": str(port)}
        procs.append(
            subprocess.Popen(argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout))
    return out


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_shape(name, tmp_path):
    outcome = OUTCOMES[name]
    if outcome[0] == "refused":
        with pytest.raises(ImportRefused) as refused:
            _import(name)
        assert outcome[1] in str(refused.value)
        return
    spec, notes = _import(name)
    if outcome[0] == "not run":
        assert any(outcome[1] in n for n in notes), notes
        return
    shutil.copy(SHAPES / "ddp_check.py", tmp_path)
    port = _free_port()
    nodes = run_nodes(spec, tmp_path, port=port)
    _, status, text = outcome
    text = text.replace("{p}", str(port)).replace("{p+1}", str(port + 1)).replace("{p+2}", str(port + 2))
    assert nodes[0].returncode == status, nodes[0].stdout
    assert all(n.returncode == status for n in nodes), [n.stdout for n in nodes]
    assert text in nodes[0].stdout


def test_openpai_roles_and_hooks(tmp_path):
    """Each node runs its own role with its index; hooks ran in order; post commands ran after a failure."""
    spec, _ = _import("openpai-master-worker.yaml")
    port = _free_port()
    assert [n.stdout.strip() for n in run_nodes(spec, tmp_path, port=port)] == [
        "chief 0 of 1",
        f"worker 0 chief at 127.0.0.1:{port}",
        f"worker 1 chief at 127.0.0.1:{port}",
    ]
    spec, _ = _import("openpai-three-roles.yaml")
    assert [n.stdout.strip() for n in run_nodes(spec, tmp_path)] == [
        "ps 3 ps,worker,evaluator",
        "worker 0 ps=127.0.0.1",
        "worker 1 ps=127.0.0.1",
        "evaluator sees workers 127.0.0.1 127.0.0.1",
    ]
    for shape, files in [
        ("openpai-deployment.yaml", {"setup.done": "setup\n", "post.done": "post ran\n"}),
        ("openpai-cmd-plugin.yaml", {"started.txt": "started\n", "succeeded.txt": "succeeded\n"}),
        ("openpai-failing.yaml", {"cleanup.done": "cleanup\n"}),
    ]:
        here = tmp_path / shape
        here.mkdir()
        run_nodes(_import(shape)[0], here)
        assert {f: (here / f).read_text() for f in files} == files


def test_openpai_notes():
    _, notes = _import("openpai-deployment.yaml")
    assert notes == [
        "deployments.unused: not chosen by defaults.deployment, not run (as in OpenPAI)",
        "name: 'deployment_job' became 'deployment-job' (Yitong names are DNS labels)",
    ]
    _, notes = _import("openpai-cmd-plugin.yaml")
    assert notes[0] == "extras.com.microsoft.pai.runtimeplugin[0] (ssh): no counterpart, ignored"
    spec, notes = _import("openpai-rocm.yaml")
    assert spec.accelerator.type == "amd.com/gpu"
    _, notes = _import("openpai-sleep-infinity.yaml")
    assert notes == [
        "taskRoles.train.completion: no counterpart, ignored",
        "taskRoles.debug.commands: sleep infinity never ends; OpenPAI ends the job when train succeeds"
        " (completion.minSucceededInstances), but a Yitong job waits for every node: stop it from train's"
        " commands or set max_run_time",
        "name: 'debug_box' became 'debug-box' (Yitong names are DNS labels)",
    ]


def test_notes_for_what_a_yitong_job_cannot_do():
    """Root, capabilities, installs under /, OpenPAI host names and internet downloads each get a
    note (a Yitong job runs as the person, without capabilities, and on Kubernetes without egress)."""
    spec, notes = _import("openpai-marketplace-data.yaml")
    assert "wget https://openpaimarketplace.blob.core.windows.net/marketplace/Couplet_data/couplet_data.tgz" in (
        spec.command.splitlines()
    )
    assert notes == [
        "taskRoles.taskrole.commands: writes under /data, which a job running as you cannot create; use a path"
        " under the working directory, $YITONG_OUTPUT_DIR or /tmp",
        "taskRoles.taskrole.commands: downloads from the internet (wget https://openpaimarketplace.blob.core."
        "windows.net/marketplace/Couplet_data/couplet_data.tgz); jobs on Kubernetes reach only the hub (the VC's"
        " NetworkPolicy): put what it fetches in a Yitong dataset (inputs), the job's code directory or the image",
        "name: 'couplet_training' became 'couplet-training' (Yitong names are DNS labels)",
    ]
    _, notes = _import("openpai-horovod-root.yaml")
    heads = [n.split(", which")[0].split(" downloads")[0] for n in notes]
    assert heads == [
        "taskRoles.master.commands: installs packages into the image (apt-get install)",
        "taskRoles.master.commands: runs sudo",
        "taskRoles.master.commands: runs mount",
        "taskRoles.master.commands: pip install horovod==0.28.1",
        "taskRoles.master.commands: master-0 is an OpenPAI host name",
        "taskRoles.master.commands: worker-0 is an OpenPAI host name",
        "taskRoles.worker.commands: installs packages into the image (apt-get install)",
        "taskRoles.worker.commands: a server never ends, and the job's completion waits for it: the job would run"
        " until cancelled or max_run_time",
        "name: 'horovod_pytorch' became 'horovod-pytorch' (Yitong names are DNS labels)",
    ]
    assert "use $PAI_HOST_IP_master_0 (set on every node)" in notes[4]
    assert "needs SYS_ADMIN or another capability" in notes[2]
    spec, notes = _import("pytorchjob-cpu-privileged.yaml")
    assert (spec.cpu, spec.memory) == (2.0, 2 * 1024**3)
    where = "spec.pytorchReplicaSpecs.Master"
    assert notes[:4] == [
        f"{where}.template.spec.securityContext: asks to run as root; a Yitong job runs as you, never as root",
        f"{where}.containers[0].securityContext.privileged: a Yitong job never runs privileged; it runs as you,"
        " without capabilities",
        f"{where}.containers[0].securityContext.capabilities.add: SYS_ADMIN not granted; a Yitong job runs"
        " without capabilities",
        f"{where}.containers[0].resources: no memory given; Yitong's default applies: memory (2Gi)",
    ]
    assert notes[4].startswith(f"{where}.containers[0].command: pip install lightgbm downloads from PyPI")


def test_share_that_import_and_run():
    """The figure docs/jobs-spec.md states: of these shapes, how many import and how many run here."""
    kinds = {"openpai": [0, 0, 0], "pytorchjob": [0, 0, 0]}
    for name, outcome in OUTCOMES.items():
        k = kinds[name.split("-")[0]]
        k[0] += 1
        k[1] += outcome[0] != "refused"
        k[2] += outcome[0] == "runs"
    assert kinds == {"openpai": [14, 14, 10], "pytorchjob": [9, 7, 5]}


def test_yt_dry_run_shows_the_converted_spec_and_notes(proc, tmp_path):
    """``yt job submit --from openpai FILE --dry-run`` against the service as a real process."""
    yt = Path(sys.executable).parent / "yt"
    env = {**os.environ, "YT_API_URL": proc.base.rstrip("/"), "YT_TOKEN": proc.hub.tokens["alice"]}
    argv = [str(yt), "job", "submit", "--from", "openpai", str(SHAPES / "openpai-deployment.yaml"), "--vc", "vision"]
    r = subprocess.run([*argv, "--dry-run"], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.startswith("name: deployment-job\nvc: vision\n"), r.stdout
    assert "export PAI_CURRENT_TASK_ROLE_NAME=train" in r.stdout
    assert r.stdout.endswith(
        "holds: 1 cpu, 512 MiB memory\nnothing was submitted (--dry-run)\n"
        "note: deployments.unused: not chosen by defaults.deployment, not run (as in OpenPAI)\n"
        "note: name: 'deployment_job' became 'deployment-job' (Yitong names are DNS labels)\n"
    ), r.stdout
    assert proc.call("alice", "GET", "jobs").json() == []
    refused = subprocess.run(
        [*argv[:3], "--from", "pytorchjob", str(SHAPES / "pytorchjob-args-only.yaml"), "--vc", "vision", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert "no command, only args (--backend gloo)" in refused.stderr
    # a job this cluster cannot run (the test cluster has 4 nvidia.com/gpu, no amd.com/gpu) still
    # shows its spec, with the reason a submit would be refused, and exits 1
    r = subprocess.run(
        [*argv[:5], str(SHAPES / "openpai-rocm.yaml"), "--vc", "vision", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stdout.startswith("name: rocm-mnist\nvc: vision\n"), r.stdout
    assert "accelerator:\n  type: amd.com/gpu\n  count: 1\n" in r.stdout
    assert "nothing was submitted (--dry-run)\nwould be refused: this cluster has no amd.com/gpu\n" in r.stdout
    assert proc.call("alice", "GET", "jobs").json() == []
    # --gpus is a cell option: 0 is refused like 1, not silently ignored
    for n in ("0", "1"):
        r = subprocess.run([*argv, "--gpus", n, "--dry-run"], capture_output=True, text=True, env=env, timeout=120)
        assert (r.returncode, r.stdout) == (2, ""), r
        assert "--gpus: only for %%yt job submit cells; put them in the spec file" in r.stderr
