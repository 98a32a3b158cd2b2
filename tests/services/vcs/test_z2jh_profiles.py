"""z2jh / KubeSpawner profile lists in the settings file, as their documentation writes them
(tests/services/vcs/z2jh): expanded into Yitong profiles with the same quota checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from yitong_services.core.settings import Settings
from yitong_services.vcs.profile_list import expand_entry

HERE = Path(__file__).parent / "z2jh"
GI = 2**30


def docs_settings() -> dict:
    return yaml.safe_load((HERE / "profile-list-docs.yaml").read_text())


def test_profile_list_as_the_docs_write_it():
    settings = Settings.model_validate(docs_settings())
    profiles = {k: v.model_dump(exclude_defaults=True) for k, v in settings.profiles.items()}
    assert profiles == {
        "minimal-environment": {
            "display_name": "Minimal environment",
            "description": "To avoid too much bells and whistles: Python.",
        },
        "datascience-environment": {
            "display_name": "Datascience environment",
            "description": "If you want the additional bells and whistles: Python, R, and Julia.",
            "image": "quay.io/jupyter/datascience-notebook:2024-04-29",
        },
        "learning-data-science": {
            "display_name": "Learning Data Science",
            "description": "Datascience Environment with Sample Notebooks",
            "image": "quay.io/jupyter/datascience-notebook:2024-04-29",
        },
        "gpu": {
            "display_name": "GPU Server",
            "description": "Spawns a notebook server with access to a GPU",
            "image": "yitong/singleuser-cuda:latest",
            "cpu": 2.0,
            "memory": 8 * GI,  # JupyterHub's 8G is 8 GiB
            "accelerator": {"type": "nvidia.com/gpu", "count": 1},
        },
        "images-pytorch": {  # the default choice first
            "display_name": "Choose your image · PyTorch",
            "description": "An image of your choice, 2 cores and 4 GiB",
            "image": "pangeo/pytorch-notebook:master",
            "cpu": 2.0,
            "memory": 4 * GI,
        },
        "images-tf": {
            "display_name": "Choose your image · TensorFlow",
            "description": "An image of your choice, 2 cores and 4 GiB",
            "image": "pangeo/ml-notebook:master",
            "cpu": 2.0,
            "memory": 4 * GI,
        },
        "images-custom": {
            "display_name": "Choose your image · Custom image",
            "description": "An image of your choice, 2 cores and 4 GiB",
            "cpu": 2.0,
            "memory": 4 * GI,
        },
    }
    assert {k: v.profiles for k, v in settings.vcs.items()} == {
        "default": ["minimal-environment", "datascience-environment"],
        "vision": ["gpu", "images-pytorch", "images-tf", "images-custom", "learning-data-science"],
    }


def test_a_map_may_hold_z2jh_entries_beside_yitong_profiles():
    settings = Settings.model_validate(
        {
            "profiles": {
                "cpu-small": {"cpu": 1, "memory": "2Gi"},
                "arm": {
                    "display_name": "ARM",
                    "kubespawner_override": {"node_selector": {"kubernetes.io/arch": "arm64"}},
                },
            },
            "vcs": {"default": {"profiles": ["cpu-small", "arm"]}},
        }
    )
    assert settings.profiles["arm"].arch == "arm64" and settings.profiles["cpu-small"].cpu == 1
    assert settings.vcs["default"].profiles == ["cpu-small", "arm"]


@pytest.mark.parametrize(
    "entry,message",
    [
        (
            {
                "display_name": "x",
                "kubespawner_override": {"extra_resource_limits": {"nvidia.com/gpu": 1, "amd.com/gpu": 1}},
            },
            "one accelerator type per profile",
        ),
        ({"display_name": "x", "color": "red"}, "profiles[0]: unknown key(s) color"),
        (
            {
                "display_name": "x",
                "profile_options": {
                    "size": {"unlisted_choice": {"enabled": True, "kubespawner_override": {"cpu_limit": "{value}"}}}
                },
            },
            "unlisted_choice: may not change cpu_limit",
        ),
        (
            {"display_name": "x", "profile_options": {"image": {"choices": {}}}},
            "no choices and no enabled unlisted_choice",
        ),
        ({"display_name": "Bad_Name!", "slug": "Bad_Name"}, "'Bad_Name' is not a valid name"),
        ({"display_name": "x", "vcs": ["nope"]}, "an entry names VC nope, which is not in vcs"),
    ],
)
def test_refusals_name_the_entry(entry, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        Settings.model_validate({"profiles": [entry], "vcs": {"default": {}}})


def test_combinations_are_bounded_and_names_stay_dns_labels():
    options = {f"o{i}": {"choices": {f"choice-{j}": {} for j in range(3)}} for i in range(3)}
    names = expand_entry({"slug": "a-long-profile-slug-name", "profile_options": options}, "p")
    assert len(names) == 27 and all(len(n) <= 32 for n in names) and len(set(names)) == 27
    options["o3"] = {"choices": {f"c{j}": {} for j in range(3)}}
    with pytest.raises(ValueError, match="81 combinations of choices; at most 64"):
        expand_entry({"slug": "s", "profile_options": options}, "p")


async def test_spawn_options_and_quota_checks(service_factory):
    """The entries are seeded as profiles; the picker and allocations check them like any other."""
    doc = docs_settings()
    async with service_factory(profiles=doc["profiles"], vcs=doc["vcs"]) as svc:
        options = (await svc.call("service", "GET", "spawn-options?user=alice")).json()
        vision = next(vc for vc in options["vcs"] if vc["name"] == "vision")
        gpu = next(p for p in vision["profiles"] if p["name"] == "gpu")
        assert (gpu["available"], gpu["placement"]["type"]) == (True, "nvidia.com/gpu")
        r = await svc.allocate("alice", "vision", "gpu", "alice/")
        assert r.status_code == 201, r.text
        assert r.json()["resources"] == {"cpu": 2.0, "memory": 8 * GI, "nvidia.com/gpu": 1}
        r = await svc.allocate("erin", "vision", "gpu", "erin/")
        assert (r.status_code, r.json()["detail"]) == (409, "VC vision: 1 of 1 nvidia.com/gpu in use")
        r = await svc.allocate("alice", "default", "gpu", "alice/second")
        assert r.status_code == 422, r.text


def test_the_docs_example_is_accepted_as_it_says():
    text = (Path(__file__).parents[3] / "docs" / "vcs.md").read_text()
    block = text.split("## Profiles written the z2jh way", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    settings = Settings.model_validate(yaml.safe_load(block))
    assert settings.vcs["vision"].profiles == ["gpu", "images-pytorch", "images-custom"]
    assert settings.vcs["default"].profiles == ["datascience-environment"]
    assert settings.profiles["gpu"].accelerator.type == "nvidia.com/gpu"
