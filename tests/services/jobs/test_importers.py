"""OpenPAI v2 and Kubeflow PyTorchJob importers against realistic fixtures (tests/services/jobs/fixtures)."""

import re
import subprocess
from pathlib import Path

import pytest

from yitong_services.jobs.importers import ImportRefused, import_file
from yitong_services.jobs.importers.pytorchjob import strip_launcher

FIXTURES = Path(__file__).parent / "fixtures"
GI = 2**30


def _import(kind, name, vc=None):
    return import_file(kind, (FIXTURES / name).read_text(), vc=vc)


EXPECTED = {
    "openpai-single-gpu.yaml": (
        {
            "name": "pytorch-mnist",
            "vc": "default",
            "environment": {"image": "openpai/standard:python_3.6-pytorch_1.2.0-gpu"},
            "command": "git clone https://github.com/pytorch/examples.git\ncd examples/mnist\npython main.py --epochs 1",
            "accelerator": {"type": "nvidia.com/gpu", "count": 1},
            "cpu": 4.0,
            "memory": 8 * GI,
            "procs_per_node": 1,
            "retries": 1,
        },
        [
            "taskRoles.taskrole.completion: no counterpart, ignored",
            "taskRoles.taskrole.taskRetryCount: no counterpart, ignored",
            "extras.com.microsoft.pai.runtimeplugin[0] (ssh): no counterpart, ignored",
            "taskRoles.taskrole.commands: downloads from the internet (git clone https://github.com/pytorch/examples.git);"
            " jobs on Kubernetes reach only the hub (the VC's NetworkPolicy): put what it fetches in a Yitong dataset"
            " (inputs), the job's code directory or the image",
            "name: 'pytorch_mnist' became 'pytorch-mnist' (Yitong names are DNS labels)",
        ],
    ),
    "openpai-ddp-multi.yaml": (
        {
            "name": "cifar10-mul-ddp-nccl",
            "vc": "vision",
            "environment": {"image": "openpai/standard:python_3.6-pytorch_1.2.0-gpu"},
            "command": "--master_addr=$PAI_HOST_IP_worker_0",
            "nodes": 2,
            "accelerator": {"type": "nvidia.com/gpu", "count": 2},
            "cpu": 8.0,
            "memory": 16 * GI,
            "procs_per_node": 1,
        },
        [
            "extras.hivedScheduler: no counterpart, ignored",
            "taskRoles.worker.completion: no counterpart, ignored",
            "taskRoles.worker.taskRetryCount: no counterpart, ignored",
            "extras.com.microsoft.pai.runtimeplugin[0] (ssh): no counterpart, ignored",
            "name: 'cifar10-mul-DDP-nccl' became 'cifar10-mul-ddp-nccl' (Yitong names are DNS labels)",
        ],
    ),
    "openpai-params-secrets.yaml": (
        {
            "name": "keras-tensorflow-mnist",
            "vc": "default",
            "environment": {"image": "openpai.azurecr.io/openpai/pai.example.keras.tensorflow:stable"},
            "command": "python mnist_keras.py --epochs 5 --batch-size 128 --job $PAI_JOB_NAME --user $PAI_USER_NAME",
            "cpu": 2.0,
            "memory": 4 * GI,
            "procs_per_node": 1,
        },
        [
            "version: no counterpart, ignored",
            "contributor: no counterpart, ignored",
            "description: no counterpart, ignored",
            "secrets: not imported (secrets never enter a job spec); pass them as environment variables",
            "taskRoles.train.extraContainerOptions: no counterpart, ignored",
            "prerequisites[1] (data 'mnist'): no task role lists it, so OpenPAI would not run it either; not run",
            "prerequisites[0].auth: registry credentials are not imported; ask an admin for an image pull secret in the VC",
            "name: 'keras_tensorflow_mnist' became 'keras-tensorflow-mnist' (Yitong names are DNS labels)",
        ],
    ),
    "pytorchjob-master-worker.yaml": (
        {
            "name": "pytorch-simple",
            "vc": "vision",
            "environment": {"image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"},
            "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
            "framework": "pytorch",
            "nodes": 2,
            "accelerator": {"type": "nvidia.com/gpu", "count": 1},
            "cpu": 4.0,
            "memory": 16 * GI,
            "procs_per_node": 1,
            "retries": 3,
            "max_run_time": 7200,
        },
        [
            "spec.pytorchReplicaSpecs.Master.restartPolicy: OnFailure has no counterpart; use retries (the whole job is retried)",
            "spec.pytorchReplicaSpecs.Master.containers[0].imagePullPolicy: no counterpart, ignored",
            "spec.pytorchReplicaSpecs.Worker.restartPolicy: OnFailure has no counterpart; use retries (the whole job is retried)",
            "spec.pytorchReplicaSpecs.Worker.containers[0].imagePullPolicy: no counterpart, ignored",
            "spec.runPolicy.cleanPodPolicy: no counterpart, ignored",
            "metadata.namespace: used as the VC 'vision' (override with --vc)",
        ],
    ),
}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_import_fixture(fixture):
    spec, notes = _import("openpai" if fixture.startswith("openpai") else "pytorchjob", fixture)
    expected_spec, expected_notes = EXPECTED[fixture]
    got = spec.model_dump(mode="json", exclude_defaults=True)
    if fixture.startswith("openpai"):  # the command text: run in test_openpai_shapes
        assert expected_spec.pop("command") in got.pop("command")
    assert got == expected_spec
    assert notes == expected_notes


def test_openpai_master_worker():
    spec, notes = _import("openpai", "openpai-master-worker.yaml", vc="nlp-big")
    assert (spec.vc, spec.nodes, spec.accelerator.count, spec.memory) == ("nlp-big", 3, 4, 64 * GI)
    ranks = []
    for rank in "012":  # each node runs its role's commands with the rank OpenPAI would have given it
        probe = spec.command.replace("python -m torch.distributed.launch", "echo")
        env = {
            "YITONG_NODE_RANK": rank,
            "YITONG_MASTER_ADDR": "h0",
            "YITONG_HOSTS": "h0,h1,h2",
            "YITONG_MASTER_PORT": "29500",
            "PATH": "/usr/bin:/bin",
        }
        ranks.append(
            subprocess.run(["bash", "-c", probe], env=env, capture_output=True, text=True, timeout=20).stdout.split()
        )
    assert [r[2] for r in ranks] == ["--node_rank=0", "--node_rank=1", "--node_rank=2"]
    assert {r[3] for r in ranks} == {"--master_addr=h0"}
    assert {r[4] for r in ranks} == {"--master_port=29500"}
    assert notes == [
        "name: 'bert_pretrain' became 'bert-pretrain' (Yitong names are DNS labels)",
    ]


def test_pytorchjob_elastic():
    spec, notes = _import("pytorchjob", "pytorchjob-elastic.yaml", vc="vision")
    assert spec.model_dump(mode="json", exclude_defaults=True) == {
        "name": "elastic-example-imagenet",
        "vc": "vision",
        "environment": {"image": "kubeflow/pytorch-elastic-example-imagenet:latest"},
        "command": ["python", "/workspace/examples/imagenet.py", "--arch=resnet18", "--epochs=20", "--batch-size=32"],
        "framework": "pytorch",
        "nodes": 2,
        "accelerator": {"type": "nvidia.com/gpu", "count": 4},
        "cpu": 16.0,
        "memory": 64 * GI,
        "procs_per_node": 4,
        "env": {"LOGLEVEL": "INFO"},
    }
    assert notes == [
        "metadata.labels: no counterpart, ignored",
        "spec.pytorchReplicaSpecs.Worker.template.spec.volumes: no counterpart, ignored",
        "spec.pytorchReplicaSpecs.Worker.restartPolicy: OnFailure has no counterpart; use retries (the whole job is retried)",
        "spec.pytorchReplicaSpecs.Worker.containers[0].imagePullPolicy: no counterpart, ignored",
        "command: its torchrun launcher is replaced by Yitong's (node count and rendezvous are set per backend)",
        "spec.pytorchReplicaSpecs.Worker.containers[0].env.POD_IP: valueFrom has no counterpart, ignored",
        "spec.elasticPolicy.rdzvBackend: elastic training has no counterpart; the job runs on a fixed 2 node(s)",
        "spec.elasticPolicy.minReplicas: elastic training has no counterpart; the job runs on a fixed 2 node(s)",
        "spec.elasticPolicy.maxReplicas: elastic training has no counterpart; the job runs on a fixed 2 node(s)",
        "spec.elasticPolicy.maxRestarts: elastic training has no counterpart; the job runs on a fixed 2 node(s)",
    ]


@pytest.mark.parametrize(
    "argv,program,nproc",
    [
        (["python", "train.py"], ["python", "train.py"], None),
        (
            ["torchrun", "--nproc_per_node=4", "--nnodes", "2", "train.py", "--lr", "1"],
            ["python", "train.py", "--lr", "1"],
            "4",
        ),
        (
            ["python3", "-m", "torch.distributed.launch", "--nproc-per-node", "8", "--use-env", "t.py"],
            ["python", "t.py"],
            "8",
        ),
        (["torchrun", "--standalone", "-m", "pkg.train"], ["python", "-m", "pkg.train"], None),
        (["torchrun", "--no-python", "./run.sh", "x"], ["./run.sh", "x"], None),
    ],
)
def test_strip_launcher(argv, program, nproc):
    assert strip_launcher(argv) == (program, nproc)


@pytest.mark.parametrize(
    "kind,fixture,vc,message",
    [
        (
            "openpai",
            "openpai-malformed.yaml",
            None,
            "taskRoles.ps_server: a different image or resourcePerInstance than worker",
        ),
        (
            "pytorchjob",
            "pytorchjob-malformed.yaml",
            None,
            "spec.pytorchReplicaSpecs.Worker: a different container than Master; a Yitong job runs the same container on every node",
        ),
        ("pytorchjob", "pytorchjob-elastic.yaml", None, "metadata.namespace: missing; name the Yitong VC to submit to"),
        (
            "openpai",
            "pytorchjob-master-worker.yaml",
            None,
            "protocolVersion: only OpenPAI protocol version 2 can be imported",
        ),
        ("pytorchjob", "openpai-single-gpu.yaml", None, "apiVersion/kind: expected kubeflow.org/v1 PyTorchJob"),
        (
            "openpai",
            "openpai-single-gpu.yaml",
            "Bad_VC",
            "the imported job is not valid: spec.vc: 'Bad_VC' is not a valid name",
        ),
    ],
)
def test_import_refusals(kind, fixture, vc, message):
    with pytest.raises(ImportRefused, match=message.replace("(", r"\(").replace(")", r"\)")):
        _import(kind, fixture, vc=vc)


OPENPAI_MIN = """protocolVersion: 2
name: t
type: job
prerequisites: [{name: img, type: dockerimage, uri: "a:1"}]
taskRoles:
  main:
    dockerImage: img
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands: [{cmd}]
defaults: {{virtualCluster: default}}
"""


@pytest.mark.parametrize(
    "cmd,message",
    [
        ("'echo <% $secrets.token %>'", "uses <% $secrets.token %>; secrets are not imported"),
        ("'cd <% $script.name %>'", r"uses <% \$script… %> but the role names no script prerequisite"),
        ("'echo <% $output.uri %>'", r"uses <% \$output… %> but the role names no output prerequisite"),
        ("'echo <% $job.name %>'", r"<% \$job.name %> cannot be resolved \(only \$parameters and the role's"),
        ("'echo <%= name %>'", r"<%= name %> is not a template this importer reads"),
        ("'echo <% $parameters.missing %>'", r"<% \$parameters.missing %> cannot be resolved"),
    ],
)
def test_openpai_template_refusals(cmd, message):
    with pytest.raises(ImportRefused, match=message.replace("$secrets", r"\$secrets")):
        import_file("openpai", OPENPAI_MIN.replace("{cmd}", cmd).replace("{{", "{").replace("}}", "}"))


@pytest.mark.parametrize(
    "role,cmd,expected",
    [
        ("data: d", "wget <% $data.uri[1] %>", "wget https://b.example/2.tgz"),
        ("data: d", "echo <% $data.uri %>", "echo https://a.example/1.tgz https://b.example/2.tgz"),
        ("script: s", "git clone <% $script.uri %> code", "git clone https://github.com/o/r.git code"),
        ("output: o", "echo <% $output.name %>", "echo o"),
    ],
)
def test_openpai_role_prerequisite_templates(role, cmd, expected):
    """``taskRoles.<r>.data|script|output`` name a prerequisite; ``<% $data.uri[i] %>`` (etc.) read it."""
    text = OPENPAI_MIN.replace("{cmd}", repr(cmd)).replace("{{", "{").replace("}}", "}")
    text = text.replace("    dockerImage: img\n", f"    dockerImage: img\n    {role}\n").replace(
        "prerequisites: [",
        "prerequisites: [{name: d, type: data, uri: [https://a.example/1.tgz, https://b.example/2.tgz]},"
        " {name: s, type: script, uri: https://github.com/o/r.git}, {name: o, type: output, uri: /out},",
    )
    spec, notes = import_file("openpai", text)
    assert expected in spec.command.splitlines()
    used = role.split(": ")[1]
    assert not any("no counterpart" in n or f"'{used}'): no task role" in n for n in notes), notes
    kind = role.split(":")[0]
    with pytest.raises(ImportRefused, match=rf"taskRoles.main.{kind}: 'nothing' is not a {kind} prerequisite"):
        import_file("openpai", text.replace(role, f"{kind}: nothing").replace(cmd, "echo hi"))
    if "[1]" in cmd:
        with pytest.raises(ImportRefused, match=r"<% \$data.uri\[5\] %>: there is no item 5"):
            import_file("openpai", text.replace("[1]", "[5]"))


@pytest.mark.parametrize(
    "text,message",
    [
        ("taskRoles: [", "openpai: not valid YAML at line 1"),
        ("- a", "openpai: expected a map at the top level"),
        ("protocolVersion: 2\ntaskRoles: {}\n", "taskRoles: a job needs at least one task role"),
    ],
)
def test_openpai_malformed_yaml(text, message):
    with pytest.raises(ImportRefused, match=message):
        import_file("openpai", text)


def test_unknown_format():
    with pytest.raises(ImportRefused, match="unknown import format 'slurm': use openpai or pytorchjob"):
        import_file("slurm", "a: 1")


@pytest.mark.parametrize(
    "kind,text,message",
    [
        (
            "openpai",
            OPENPAI_MIN.replace("{cmd}", "echo").replace("cpu: 1,", "cpu: '1; rm -rf /',"),
            "resourcePerInstance.cpu: '1; rm -rf /' is not a number of at least 0",
        ),
        (
            "openpai",
            OPENPAI_MIN.replace("{cmd}", "echo").replace(
                "    commands:", "    completion: {minSucceededInstances: x}\n    commands:"
            ),
            "taskRoles.main.completion: minFailedInstances and minSucceededInstances are numbers",
        ),
        (
            "pytorchjob",
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a, namespace: v}\nspec:\n"
            "  pytorchReplicaSpecs:\n    Worker:\n      replicas: two\n      template: {spec: {containers: "
            "[{name: pytorch, image: i, command: [python, t.py]}]}}\n",
            "pytorchjob: a field has a value of the wrong type or shape",
        ),
    ],
)
def test_wrong_types_are_refused_with_a_sentence(kind, text, message):
    with pytest.raises(ImportRefused, match=re.escape(message)):
        import_file(kind, text.replace("{{", "{").replace("}}", "}") if kind == "openpai" else text)


def test_many_instances_stay_a_small_command():
    text = OPENPAI_MIN.replace("{cmd}", "'echo $PAI_HOST_IP_main_999 $PAI_TASK_INDEX'").replace(
        "    dockerImage: img", "    instances: 1000\n    dockerImage: img"
    )
    spec, _ = import_file("openpai", text.replace("{{", "{").replace("}}", "}"))
    assert spec.nodes == 1000 and len(spec.command) < 3000
    hosts = ",".join(f"h{i}" for i in range(1000))
    env = {"YITONG_NODE_RANK": "7", "YITONG_HOSTS": hosts, "YITONG_MASTER_PORT": "29500", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", spec.command], env=env, capture_output=True, text=True, timeout=20)
    assert out.stdout.split() == ["h999", "7"], out.stderr
