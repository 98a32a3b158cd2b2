"""The pure part of ``POST /people`` (vcs/people.py): JupyterHub's name rules and the hub groups
that make someone a member of the VCs asked for. The route against a real hub and the console's
form: tests/e2e/test_console.py."""

from __future__ import annotations

import pytest

from yitong_services.core.errors import Refusal
from yitong_services.vcs.people import groups_for, normalize_name

VCS = {"default": ["everyone"], "vision": ["vision", "cv-guests"], "empty": []}


@pytest.mark.parametrize("name, expected", [("alice", "alice"), ("Alice", "alice"), ("a.b@x.org", "a.b@x.org")])
def test_names(name, expected):
    assert normalize_name(name) == expected


@pytest.mark.parametrize("name", ["a/b", "..", ".", " alice", "alice "])
def test_names_refused(name):
    with pytest.raises(Refusal) as e:
        normalize_name(name)
    assert e.value.status == 422 and "is not a valid JupyterHub user name" in e.value.detail


@pytest.mark.parametrize(
    "vcs, groups, expected",
    [
        ([], [], []),
        (["default"], [], ["everyone"]),
        (["vision", "default"], ["extra", "extra"], ["extra", "vision", "everyone"]),  # each VC's first group, once
        (["vision"], ["vision"], ["vision"]),
    ],
)
def test_groups_for(vcs, groups, expected):
    assert groups_for(VCS, vcs, groups) == expected


@pytest.mark.parametrize(
    "vcs, status, sentence",
    [
        (["robots"], 404, "there is no VC robots"),
        (["empty"], 422, "VC empty grants membership to no group"),
    ],
)
def test_groups_for_refusals(vcs, status, sentence):
    with pytest.raises(Refusal) as e:
        groups_for(VCS, vcs, [])
    assert e.value.status == status and e.value.detail.startswith(sentence)
