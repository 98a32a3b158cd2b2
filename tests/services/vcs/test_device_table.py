"""One accelerator table (the settings' ``devices``): one change moves notebooks and jobs together.

The notebook side is the real route (``GET /spawn-options``) fed to the real spawner's
``profile_overrides`` (KubeSpawner overrides, SlurmSpawner ``req_gres``); the job side is the
jobs' builders (``jobs/kube.py``, ``jobs/slurm.py``) given the table the job backends read.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from yitong_services.core.settings import Settings, SettingsError, load_settings
from yitong_services.jobs.kube import job_manifests
from yitong_services.jobs.kueue import default_flavors
from yitong_services.jobs.runner_kube import KubeBackend
from yitong_services.jobs.runner_slurm import SlurmBackend
from yitong_services.jobs.slurm import batch_script, qos_grptres
from yitong_services.jobs.spec import spec_from_dict
from yitong_services.vcs.devices import placement, visible_env_names
from yitong_spawner.spawner import YitongSpawner

DEFAULT_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
CHANGED_TOLERATIONS = [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
CHANGED = {
    "nvidia.com/gpu": {
        "gres": "a100",
        "node_selector": {"gpu.example.com/model": "a100"},
        "tolerations": CHANGED_TOLERATIONS,
    }
}
JOB = {
    "name": "train",
    "vc": "vision",
    "environment": {"image": "yitong/pytorch:2"},
    "command": ["python", "train.py"],
    "accelerator": {"type": "nvidia.com/gpu", "count": 1},
}


def notebook_overrides(backend: str, options: dict, data_dir: str) -> dict:
    vision = next(vc for vc in options["vcs"] if vc["name"] == "vision")
    gpu = next(p for p in vision["profiles"] if p["name"] == "gpu-1")
    spawner = YitongSpawner(backend=backend, user=SimpleNamespace(name="alice"), data_dir=data_dir)
    spawner.visible_env = options["visible_env"]
    return spawner.profile_overrides(vision, gpu, {"id": 1})


@pytest.mark.parametrize(
    "devices, selector, tolerations, gres",
    [
        (None, {"accelerator": "nvidia"}, DEFAULT_TOLERATIONS, "gpu"),
        (CHANGED, {"gpu.example.com/model": "a100"}, CHANGED_TOLERATIONS, "a100"),
    ],
)
async def test_one_settings_change_moves_notebooks_and_jobs(
    service_factory, tmp_path, devices, selector, tolerations, gres
):
    async with service_factory(**({"devices": devices} if devices else {})) as svc:
        options = (await svc.call("service", "GET", "spawn-options?user=alice")).json()
        settings = svc.ctx.settings

    kube = notebook_overrides("kubernetes", options, str(tmp_path))
    assert (kube["node_selector"], kube["tolerations"]) == (selector, tolerations)
    assert kube["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert notebook_overrides("slurm", options, str(tmp_path))["req_gres"] == f"{gres}:1"

    spec = spec_from_dict(JOB)
    _, job = job_manifests(spec, 7, "yitong-vision", "vision", devices=KubeBackend(tmp_path, settings).devices)
    pod = job["spec"]["template"]["spec"]
    assert (pod["nodeSelector"], pod["tolerations"]) == (selector, tolerations)
    script = batch_script(spec, 7, devices=SlurmBackend(tmp_path, settings).devices)
    assert f"#SBATCH --gres={gres}:1" in script.splitlines()
    # and the VC's queue objects: the Kueue flavor and the Slurm QOS limit
    [flavor] = [f for f in default_flavors(settings.devices) if f.resources == ("nvidia.com/gpu",)]
    assert (flavor.node_labels, list(flavor.tolerations)) == (selector, tolerations)
    assert qos_grptres({"nvidia.com/gpu": 2}, settings.devices) == f"gres/{gres}=2"


def test_the_local_variables_follow_the_table(tmp_path):
    """A renamed visible-device variable: notebooks on the local backend set the new one."""
    settings = Settings.model_validate({"devices": {"nvidia.com/gpu": {"visible_env": ["MY_GPUS"]}}})
    options = {
        "visible_env": visible_env_names(settings.devices),
        "vcs": [
            {
                "name": "vision",
                "profiles": [
                    {
                        "name": "gpu-1",
                        "cpu": 1.0,
                        "memory": 2**30,
                        "accelerator": {"type": "nvidia.com/gpu", "count": 2},
                        "placement": placement("nvidia.com/gpu", settings.devices),
                    }
                ],
            }
        ],
    }
    env = notebook_overrides("local", options, str(tmp_path))["environment"]
    assert {k: env[k] for k in options["visible_env"]} == {
        "ASCEND_RT_VISIBLE_DEVICES": "",
        "ASCEND_VISIBLE_DEVICES": "",
        "MY_GPUS": "0,1",
    }
    assert "CUDA_VISIBLE_DEVICES" not in env


@pytest.mark.parametrize(
    "section, message",
    [
        (
            '{nvidia.com/gpu: {gres: "gpu:2\\nrm"}}',
            "devices.nvidia.com/gpu.gres: 'gpu:2\\nrm' is not a valid Slurm GRES name",
        ),
        ("{nvidia.com/gpu: {visible_env: [1GPU]}}", "devices.nvidia.com/gpu.visible_env.0: '1GPU' is not a valid"),
        (
            "{nvidia.com/gpu: {selector: {}}}",
            "devices.nvidia.com/gpu.selector: unknown key (a typo? docs/settings.md lists the keys)",
        ),
        ("{nvidia.com/gpu: {tolerations: [{effect: Never}]}}", "devices.nvidia.com/gpu.tolerations.0.effect"),
        ("{memory: {gres: mem}}", "'memory' is not a device type"),
        ("[gpu]", "devices: must be a map of device type"),
    ],
)
def test_a_bad_table_is_refused_naming_the_key(tmp_path, section, message):
    path = tmp_path / "settings.yaml"
    path.write_text(f"devices: {section}\n")
    with pytest.raises(SettingsError) as refused:
        load_settings(path, tmp_path)
    assert message in str(refused.value)


def test_null_removes_a_type_and_new_types_start_empty():
    settings = Settings.model_validate({"devices": {"huawei.com/Ascend910": None, "amd.com/gpu": {"gres": "mi300"}}})
    assert sorted(settings.devices) == ["amd.com/gpu", "nvidia.com/gpu"]
    amd = settings.devices["amd.com/gpu"]
    assert (amd.gres, amd.visible_env, amd.node_selector, amd.dist_backend, amd.flavor_name) == (
        "mi300",
        (),
        {},
        "gloo",
        "amd-com-gpu",
    )
