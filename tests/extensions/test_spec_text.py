"""The job form's pure builders (extensions/src/specText.ts) run by node on the compiled module
(extensions/lib, built by `make install`): a stored spec (memory in bytes, cpu as a float) shows
as YAML in human units, the fields follow the YAML, and the fields make the spec the service
reads. No browser: the browser side is tests/e2e/test_jobs_browser.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import require

LIB = Path(__file__).resolve().parents[2] / "extensions" / "lib" / "specText.js"


def run(expression: str):
    """`expression` evaluated by node with specText's exports in scope; its JSON value."""
    require("node", shutil.which("node") is not None, "apt-get install nodejs")
    require("the compiled extension", LIB.exists(), "make install")
    script = (
        f"import * as s from {json.dumps(LIB.as_uri())};\n"
        "const { specYAML, parseSpecYAML, fieldsFromSpec, specFromFields, memoryText, cpuText } = s;\n"
        f"process.stdout.write(JSON.stringify({expression}));\n"
    )
    out = subprocess.run(
        ["node", "--no-warnings", "--experimental-detect-module", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    ("value", "text"),
    [(2147483648, "2Gi"), (268435456, "256Mi"), (1536 * 1024, "1536Ki"), (1000, 1000), ("2Gi", "2Gi")],
)
def test_memory_in_binary_units(value, text):
    assert run(f"memoryText({json.dumps(value)})") == text


@pytest.mark.parametrize(("value", "text"), [(0.5, "500m"), (2, 2), (1.25, "1250m"), ("500m", "500m")])
def test_cpu_in_millicores_or_cores(value, text):
    assert run(f"cpuText({json.dumps(value)})") == text


def test_a_stored_spec_clones_as_yaml_in_human_units():
    stored = {
        "name": "hello",
        "vc": "vision",
        "environment": {"image": None, "kernel": "python3"},
        "command": 'python -c "print(42)"\necho done',
        "memory": 2147483648,
        "cpu": 0.5,
        "accelerator": None,
        "inputs": [{"dataset": "vision/toy@3", "mount": "toy"}],
        "env": {"A": "1"},
    }
    text = run(f"specYAML({json.dumps(stored)})")
    assert "memory: 2Gi\n" in text and "cpu: 500m\n" in text, text
    assert "image" not in text and "accelerator" not in text, text
    assert 'command: |-\n  python -c "print(42)"\n  echo done\n' in text, text
    back = run(f"parseSpecYAML({json.dumps(text)})")
    assert back["inputs"] == stored["inputs"] and back["env"] == {"A": "1"}
    fields = run(f"fieldsFromSpec({json.dumps(stored)})")
    assert (fields["memory"], fields["cpu"], fields["dataset"], fields["kernel"]) == (
        "2Gi",
        "500m",
        "vision/toy@3",
        "python3",
    )


def test_fields_over_a_spec_keep_what_the_fields_do_not_show():
    base = {
        "name": "x",
        "vc": "vision",
        "env": {"A": "1"},
        "retries": 2,
        "inputs": [{"dataset": "a/b"}, {"dataset": "c/d"}],
    }
    values = {
        "vc": "vision",
        "name": " train ",
        "command": "python train.py",
        "kernel": "",
        "image": "",
        "framework": "pytorch",
        "nodes": "2",
        "procs": "",
        "cpu": "500m",
        "memory": "4Gi",
        "accelType": "nvidia.com/gpu",
        "accelCount": "",
        "dataset": "vision/toy",
    }
    spec = run(f"specFromFields({json.dumps(values)}, {json.dumps(base)})")
    assert spec == {
        "name": "train",
        "vc": "vision",
        "env": {"A": "1"},
        "retries": 2,
        "environment": {"kernel": "python3"},
        "command": "python train.py",
        "framework": "pytorch",
        "nodes": 2,
        "cpu": "500m",
        "memory": "4Gi",
        "accelerator": {"type": "nvidia.com/gpu", "count": 1},
        "inputs": [{"dataset": "vision/toy"}, {"dataset": "c/d"}],
    }


def test_yaml_that_is_not_a_mapping_is_named():
    assert (
        run("parseSpecYAML('- a\\n- b').message")
        == "the spec is a mapping of fields (name: ..., vc: ..., command: ...)"
    )
    assert "at line" in run("parseSpecYAML('name: [').message")
