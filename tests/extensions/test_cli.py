"""``yt``: one grammar, text tables, --json, errors (exit 1 + the service's sentence)."""

import json
import sys

import pytest

from yitong_lab.cli.grammar import COMMANDS, build_parser, run


def test_vc_ls_console_script(yt_env, yt, vc_ls_text):
    result = yt("vc", "ls")
    assert (result.returncode, result.stdout, result.stderr) == (0, vc_ls_text, "")


def test_json(yt_env, capsys):
    assert run(["vc", "ls", "--json"]) == 0
    assert [vc["name"] for vc in json.loads(capsys.readouterr().out)] == ["default", "vision"]
    assert run(["whoami", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "alice"


def test_vc_show(yt_env, capsys):
    assert run(["vc", "show", "vision"]) == 0
    assert (
        capsys.readouterr().out
        == """\
name:         vision
description:  -
groups:       vision
profiles:     cpu-small, gpu-1
user caps:    nvidia.com/gpu=1

RESOURCE        QUOTA   USED   FREE
cpu             8       1.5    6.5
memory          16 GiB  2 GiB  14 GiB
nvidia.com/gpu  2       1      1
"""
    )


def test_whoami_and_profiles(yt_env, capsys):
    assert run(["whoami"]) == 0
    assert capsys.readouterr().out == (
        "name:    alice\nadmin:   no\ngroups:  everyone, vision\nvcs:     default, vision\n"
    )
    assert run(["profile", "ls"]) == 0
    assert (
        capsys.readouterr().out
        == """\
PROFILE    DISPLAY NAME         CPU  MEMORY  ACCELERATOR        ARCH
cpu-small  CPU · 1 core, 2 GiB  1    2 GiB   -                  any
gpu-1      1 GPU                4    16 GiB  nvidia.com/gpu x1  amd64
"""
    )


def test_service_refusal_exit_1_with_sentence(yt_env, yt):
    result = yt("vc", "show", "vision", token="bob-token")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "yt: bob is not a member of VC vision\n"


def test_admin_create_edit_rm(yt_env, monkeypatch, capsys):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "admin-token")
    argv = [
        "vc",
        "create",
        "nlp",
        "--quota",
        "cpu=8,memory=16Gi",
        "--quota",
        "nvidia.com/gpu=2",
        "--group",
        "nlp",
        "--group",
        "ml",
        "--profile",
        "cpu-small",
        "--user-cap",
        "nvidia.com/gpu=1",
        "--description",
        "Text models",
    ]
    assert run(argv) == 0
    assert yt_env.requests[-1][3] == {
        "name": "nlp",
        "description": "Text models",
        "groups": ["nlp", "ml"],
        "profiles": ["cpu-small"],
        "quota": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"},  # as typed: the service parses
        "user_caps": {"nvidia.com/gpu": "1"},
    }
    out = capsys.readouterr().out
    assert "name:         nlp" in out and "memory          16 GiB" in out
    assert run(["vc", "edit", "nlp", "--quota", "cpu=16", "--add-group", "vision", "--remove-group", "ml"]) == 0
    assert yt_env.requests[-1][3] == {
        "quota": {"cpu": "16", "memory": 16 * 2**30, "nvidia.com/gpu": 2},  # merged over the current numbers
        "groups": ["nlp", "vision"],
    }
    assert run(["vc", "edit", "nlp", "--description", "x"]) == 0
    assert yt_env.requests[-1][:4:3] == ("PATCH", {"description": "x"})
    capsys.readouterr()
    assert run(["vc", "rm", "nlp", "--yes"]) == 0
    assert capsys.readouterr().out == "deleted VC nlp\n"
    assert run(["vc", "rm", "vision", "--yes"]) == 1
    assert capsys.readouterr().err == "yt: VC vision is in use by 1 allocation (alice/)\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["vc", "create", "x", "--quota", "cpu"], "is not resource=amount"),
        (["vc", "create", "x", "--quota", "memory="], "is not resource=amount"),
        (["vc", "frobnicate"], "invalid choice"),
        ([], "required: COMMAND"),
    ],
)
def test_usage_errors_exit_2(yt_env, capsys, argv, message):
    assert run(argv) == 2
    assert message in capsys.readouterr().err
    assert yt_env.requests == []


@pytest.mark.parametrize(
    "quota, sentence",
    [
        ("cpu=lots", "quota: cpu: 'lots' is not a quantity (examples: 2, 0.5, 500m, 2Gi, 512M)"),
        ("nvidia.com/gpu=1.5", "quota: nvidia.com/gpu: '1.5' is not a whole number of devices"),
        ("memory=3Qi", "quota: memory: '3Qi' is not a quantity (examples: 2, 0.5, 500m, 2Gi, 512M)"),
    ],
)
def test_amounts_are_the_services_to_refuse(yt_env, monkeypatch, capsys, quota, sentence):
    """The CLI sends amounts as typed; the platform's one parser refuses a bad one (exit 1)."""
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "admin-token")
    assert run(["vc", "create", "x", "--quota", quota]) == 1
    assert capsys.readouterr().err == f"yt: {sentence}\n"
    assert yt_env.requests[-1][3]["quota"] == dict([quota.split("=")])


def test_refusals_before_any_call(yt_env, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", None)
    assert run(["vc", "rm", "nlp"]) == 2
    assert capsys.readouterr().err == "yt: deleting VC nlp cannot be undone: repeat with --yes\n"
    assert run(["vc", "edit", "nlp"]) == 2
    assert "nothing to change" in capsys.readouterr().err
    assert yt_env.requests == []


def test_help_lists_every_noun(capsys):
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(noun in out for noun in COMMANDS)
    assert build_parser().parse_args(["vc", "ls"]).func.__module__ == "yitong_lab.cli.vc"
