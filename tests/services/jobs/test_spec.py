"""The job spec: parsing, defaults, person-readable refusals, quota totals (pure, no servers)."""

from pathlib import Path

import pytest

from yitong_services.jobs import JobSpecError, parse_job_yaml, per_job_resources, per_node_resources
from yitong_services.jobs.fields import parse_duration
from yitong_services.jobs.spec import spec_from_dict

GI = 2**30
FIXTURES = Path(__file__).parent / "fixtures"
BASE = {
    "name": "mnist",
    "vc": "vision",
    "environment": {"image": "yitong/pytorch:2"},
    "command": ["python", "train.py"],
}


def test_example_fixture():
    spec = parse_job_yaml((FIXTURES / "yitong-example.yaml").read_text())
    assert spec.model_dump(mode="json") == {
        "name": "resnet50",
        "vc": "default",
        "environment": {"image": "yitong/singleuser-cuda:latest", "kernel": None},
        "command": 'python train.py --epochs 90 --data "$YITONG_INPUT_IMAGENET" --out "$YITONG_OUTPUT_DIR"',
        "framework": "pytorch",
        "nodes": 2,
        "accelerator": {"type": "nvidia.com/gpu", "count": 4},
        "cpu": 16.0,
        "memory": 64 * GI,
        "procs_per_node": 4,
        "inputs": [{"dataset": "default/imagenet@v3", "mount": "imagenet"}],
        "outputs": "checkpoints",
        "env": {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "4"},
        "retries": 1,
        "priority": "high",
        "max_run_time": 7200,
        "hub_token": True,
    }
    assert spec.shell and spec.priority_value == 100
    assert spec.inputs[0].parts() == ("default", "imagenet", "v3")


def test_defaults():
    spec = spec_from_dict(BASE)
    assert (
        spec.framework.value,
        spec.nodes,
        spec.accelerator,
        spec.cpu,
        spec.memory,
        spec.procs_per_node,
        spec.inputs,
        spec.outputs,
        spec.env,
        spec.retries,
        spec.priority_value,
        spec.max_run_time,
    ) == ("plain", 1, None, 1.0, 2 * GI, 1, [], "outputs", {}, 0, 0, None)


@pytest.mark.parametrize(
    "change,field,expected",
    [
        ({"inputs": [{"dataset": "vision/mnist"}]}, "inputs", [{"dataset": "vision/mnist@latest", "mount": "mnist"}]),
        (
            {"inputs": [{"dataset": "nlp/wiki@stable", "mount": "corpus"}]},
            "inputs",
            [{"dataset": "nlp/wiki@stable", "mount": "corpus"}],
        ),
        ({"accelerator": {"type": "huawei.com/Ascend910", "count": 8}}, "procs_per_node", 8),
        ({"accelerator": {"type": "nvidia.com/gpu", "count": 8}, "procs_per_node": 2}, "procs_per_node", 2),
        ({"env": {"N": 4, "FLAG": True, "X": 0.5}}, "env", {"N": "4", "FLAG": "true", "X": "0.5"}),
        ({"priority": "LOW"}, "priority", "low"),
        ({"priority": -5}, "priority", -5),
        ({"cpu": "500m", "memory": "512Mi"}, "cpu", 0.5),
        ({"command": "python train.py && echo done"}, "command", "python train.py && echo done"),
        ({"environment": {"kernel": "python3"}}, "environment", {"image": None, "kernel": "python3"}),
    ],
)
def test_fields(change, field, expected):
    assert spec_from_dict({**BASE, **change}).model_dump(mode="json")[field] == expected


@pytest.mark.parametrize(
    "value,seconds",
    [(3600, 3600), ("3600", 3600), ("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("1d", 86400), ("45s", 45)],
)
def test_durations(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    "change,message",
    [
        ({"nodes": 0}, "spec.nodes: must be at least 1"),
        ({"nodes": "two"}, "spec.nodes: must be a whole number"),
        ({"name": "My Job; rm -rf /"}, "spec.name: 'My Job; rm -rf /' is not a valid name"),
        ({"vc": "$(id)"}, "spec.vc: '$(id)' is not a valid name"),
        ({"gpus": 2}, "spec.gpus: unknown field"),
        ({"environment": {}}, "spec.environment: give an image, a kernel, or both"),
        ({"environment": {"image": "x; rm -rf /"}}, "spec.environment.image: 'x; rm -rf /' is not an image reference"),
        ({"command": []}, "spec.command: give a list of arguments or a shell command string"),
        ({"command": "  "}, "spec.command: is empty"),
        ({"command": ["python", 3]}, "spec.command: every argument must be a string"),
        ({"framework": "jax"}, "spec.framework: must be one of 'pytorch', 'tensorflow', 'mpi', 'mindspore' or 'plain'"),
        ({"accelerator": {"type": "gpu", "count": 1}}, "spec.accelerator.type: unknown resource 'gpu'"),
        ({"accelerator": {"type": "nvidia.com/gpu", "count": 0}}, "spec.accelerator.count: must be at least 1"),
        ({"cpu": "0"}, "spec.cpu: must be more than 0"),
        ({"memory": "2Gx"}, "spec.memory: memory: '2Gx' is not a quantity"),
        (
            {"inputs": [{"dataset": "mnist"}]},
            "spec.inputs[0].dataset: 'mnist' is not a dataset version like vision/mnist@3",
        ),
        (
            {"inputs": [{"dataset": "a/b@1", "mount": "x"}, {"dataset": "a/c@1", "mount": "x"}]},
            "spec: inputs: mount 'x' is used twice",
        ),
        ({"outputs": "../etc"}, "spec.outputs: '../etc' must be a relative path"),
        ({"outputs": "/abs"}, "spec.outputs: '/abs' must be a relative path"),
        ({"env": {"BAD-NAME": "x"}}, "spec.env: 'BAD-NAME' is not a variable name"),
        (
            {"env": {"YITONG_JOB_ID": "1"}},
            "spec.env: YITONG_JOB_ID: names starting with YITONG_ are set by the platform",
        ),
        ({"env": {"A": {"b": 1}}}, "spec.env: A: the value must be a string or a number"),
        ({"retries": -1}, "spec.retries: must be at least 0"),
        ({"priority": "urgent"}, "spec.priority: 'urgent' is not a priority"),
        ({"max_run_time": "2 weeks"}, "spec.max_run_time: '2 weeks' is not a duration"),
        ({"max_run_time": 0}, "spec.max_run_time: must be at least 1 second"),
        ({"procs_per_node": 0}, "spec.procs_per_node: must be at least 1"),
    ],
)
def test_refusals(change, message):
    with pytest.raises(JobSpecError) as e:
        spec_from_dict({**BASE, **change})
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize(
    "text,message",
    [
        ("name: [a\n", "spec: not valid YAML at line 2, column 1"),
        ("- a\n- b\n", "spec: must be a map of fields, got list"),
        ("", "spec: must be a map of fields, got NoneType"),
        ("name: a\n", "spec.vc: is required; spec.environment: is required; spec.command: is required"),
    ],
)
def test_yaml_refusals(text, message):
    with pytest.raises(JobSpecError, match=message.replace("[", r"\[")):
        parse_job_yaml(text)


def test_resources():
    spec = spec_from_dict(
        {**BASE, "nodes": 3, "cpu": "1500m", "memory": "4Gi", "accelerator": {"type": "nvidia.com/gpu", "count": 2}}
    )
    assert per_node_resources(spec) == {"cpu": 1.5, "memory": 4 * GI, "nvidia.com/gpu": 2}
    assert per_job_resources(spec) == {"cpu": 4.5, "memory": 12 * GI, "nvidia.com/gpu": 6}
    assert per_job_resources(spec_from_dict(BASE)) == {"cpu": 1.0, "memory": 2 * GI}


def test_docs_example_is_the_fixture():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "jobs-spec.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert parse_job_yaml(example) == parse_job_yaml((FIXTURES / "yitong-example.yaml").read_text())
