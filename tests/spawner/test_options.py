"""User options are hostile input: parse_form and validate_options as tables of cases."""

from __future__ import annotations

import pytest
from spawner.platform_standin import profile, vc

from yitong_spawner.options import OptionsError, parse_form, validate_options

OFFER = {
    "user": "alice",
    "vcs": [
        vc(
            "vision",
            [profile("cpu-small"), profile("gpu-1", available=False, reason="VC vision: 2 of 2 nvidia.com/gpu in use")],
        ),
        vc("nlp", [profile("gpu-1"), profile("npu-8")]),
    ],
}


@pytest.mark.parametrize(
    "form, expected",
    [
        ({"profile": ["vision/gpu-1"]}, {"vc": "vision", "profile": "gpu-1"}),
        ({"profile": ["vision/gpu-1"], "_xsrf": ["abc"], "image": ["evil"]}, {"vc": "vision", "profile": "gpu-1"}),
        ({"profile": "nlp/npu-8"}, {"vc": "nlp", "profile": "npu-8"}),  # query arguments are plain strings
        ({"profile": ["cpu-small"]}, {"profile": "cpu-small"}),
        ({"profile": [""]}, {}),
        ({}, {}),
    ],
)
def test_parse_form(form, expected):
    assert parse_form(form) == expected


@pytest.mark.parametrize(
    "options, expected",
    [
        ({}, ("vision", "cpu-small")),
        (None, ("vision", "cpu-small")),
        ({"vc": "nlp"}, ("nlp", "gpu-1")),
        ({"profile": "gpu-1"}, ("nlp", "gpu-1")),  # prefers the VC where it is available now
        ({"vc": "vision", "profile": "gpu-1"}, ("vision", "gpu-1")),  # unavailable: the allocation explains
        ({"vc": "nlp", "profile": "npu-8"}, ("nlp", "npu-8")),
    ],
)
def test_valid_options(options, expected):
    v, p = validate_options(options, OFFER)
    assert (v["name"], p["name"]) == expected


@pytest.mark.parametrize(
    "options, offer, message",
    [
        ({"vc": "vision", "image": "x"}, OFFER, "Unknown server option(s): image. Allowed: vc, profile, custom."),
        ([1], OFFER, "Server options must be a JSON object with the keys vc, profile and custom."),
        ({"profile": 3}, OFFER, "Server option profile must be a string."),
        ({"vc": "secret"}, OFFER, "VC secret does not exist or you are not a member of it."),
        ({"vc": "vision", "profile": "npu-8"}, OFFER, "Profile npu-8 is not offered by VC vision."),
        ({"profile": "deleted"}, OFFER, "Profile deleted is not offered by any of your VCs."),
        (
            {},
            {"vcs": []},
            "You are not a member of any virtual cluster (VC), so no server can be started. "
            "Ask an administrator to add you to a VC.",
        ),
        ({}, {"vcs": [vc("empty", [])]}, "None of your VCs offers a server profile. Ask an administrator to add one."),
        (
            {},
            {"vcs": [vc("v", [profile("g", available=False, reason="VC v: 1 of 1 nvidia.com/gpu in use")])]},
            "No server profile is available right now (g: VC v: 1 of 1 nvidia.com/gpu in use).",
        ),
    ],
)
def test_invalid_options(options, offer, message):
    with pytest.raises(OptionsError) as info:
        validate_options(options, offer)
    assert str(info.value) == message


def test_validated_models_are_copies():
    v, p = validate_options({}, OFFER)
    p["cpu"] = 99
    v["profiles"].clear()
    assert OFFER["vcs"][0]["profiles"][0]["cpu"] == 1.0
