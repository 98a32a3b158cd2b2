"""The hub's half of z2jh profile lists (yitong_spawner.profile_list): the same names as the platform's
expansion, the override keys it keeps, and the person's value for an unlisted choice."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from yitong_spawner.builders import layered
from yitong_spawner.hubconfig import hub_config
from yitong_spawner.profile_list import check_custom, hub_overrides, kube_extra

DOCS = Path(__file__).parents[1] / "services" / "vcs" / "z2jh" / "profile-list-docs.yaml"


def test_names_are_the_platforms():
    from yitong_services.core.settings import Settings  # the service's expansion of the same file

    settings = yaml.safe_load(DOCS.read_text())
    platform = set(Settings.model_validate(settings).profiles)
    hub = hub_overrides(settings["profiles"])
    assert set(hub) <= platform
    assert hub == {
        "learning-data-science": {
            "override": {
                "lifecycle_hooks": {
                    "postStart": {
                        "exec": {
                            "command": [
                                "sh",
                                "-c",
                                "gitpuller https://github.com/data-8/materials-fa17 master materials-fa",
                            ]
                        }
                    }
                }
            },
            "unlisted": None,
        },
        "images-custom": {
            "override": {},
            "unlisted": {
                "regex": "^.+:.+$",
                "message": "Must be an image with a tag",
                "override": {"image": "{value}"},
            },
        },
    }


@pytest.mark.parametrize(
    "value, result",
    [
        ("quay.io/jupyter/r-notebook:2024", "quay.io/jupyter/r-notebook:2024"),
        ("  spaced:1  ", "spaced:1"),
        ("no-tag", ValueError("Must be an image with a tag")),
        (None, ValueError("This profile needs a custom value")),
        ("a:" + "b" * 300, ValueError("at most 256 characters")),
        ("a:b\nc", ValueError("one line")),
    ],
)
def test_check_custom(value, result):
    entry = hub_overrides(yaml.safe_load(DOCS.read_text())["profiles"])["images-custom"]
    if isinstance(result, Exception):
        with pytest.raises(ValueError, match=str(result)):
            check_custom(entry, value)
    else:
        assert check_custom(entry, value) == result
        assert kube_extra(entry, result) == {"image": result}


def test_no_custom_value_for_a_profile_without_one():
    assert check_custom(None, None) is None
    with pytest.raises(ValueError, match="takes no custom value"):
        check_custom({"override": {}, "unlisted": None}, "x:1")


def test_an_entry_without_a_regex_refuses_every_value():
    entry = {"override": {}, "unlisted": {"regex": None, "message": "", "override": {"image": "{value}"}}}
    with pytest.raises(ValueError, match="must match None"):
        check_custom(entry, "x:1")


def test_layered_platform_traits_win():
    below = {"environment": {"A": "1", "YITONG_VC": "forged"}, "tolerations": [{"key": "a"}], "namespace": "x"}
    top = {"environment": {"YITONG_VC": "vision"}, "tolerations": [{"key": "b"}], "namespace": "yitong-vision"}
    assert layered(below, top) == {
        "environment": {"A": "1", "YITONG_VC": "vision"},
        "tolerations": [{"key": "a"}, {"key": "b"}],
        "namespace": "yitong-vision",
    }


def test_hub_config_carries_the_overrides_on_kubernetes():
    settings = {"backend": "kubernetes", **yaml.safe_load(DOCS.read_text())}
    cfg = hub_config(settings, settings_path="s.yaml", data_dir="/d", service_token="t")
    assert set(cfg["YitongSpawner"]["kubespawner_overrides"]) == {"learning-data-science", "images-custom"}
    local = hub_config({**settings, "backend": "local"}, settings_path="s.yaml", data_dir="/d", service_token="t")
    assert "kubespawner_overrides" not in local["YitongSpawner"]
