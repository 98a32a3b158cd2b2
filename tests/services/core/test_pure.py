"""Pure functions against literals: quantities, quota checks, authorisation rules, settings."""

import pytest

from yitong_services.core.authz import (
    Identity,
    Person,
    act_for_refusal,
    create_allocation_refusal,
    is_member,
    release_refusal,
)
from yitong_services.core.settings import SettingsError, load_settings
from yitong_services.vcs import quota
from yitong_services.vcs.quantities import format_amount, parse_amount, parse_resources

GI = 2**30


@pytest.mark.parametrize(
    "resource,value,expected",
    [
        ("cpu", "500m", 0.5),
        ("cpu", "0.5", 0.5),
        ("cpu", 2, 2.0),
        ("cpu", "1.5", 1.5),
        ("memory", "2Gi", 2 * GI),
        ("memory", "512M", 512_000_000),
        ("memory", "1Ki", 1024),
        ("memory", 1024, 1024),
        ("memory", "1.5Gi", 3 * 2**29),
        ("nvidia.com/gpu", 2, 2),
        ("nvidia.com/gpu", "2", 2),
        ("huawei.com/Ascend910", 8, 8),
    ],
)
def test_parse_amount(resource, value, expected):
    got = parse_amount(resource, value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    "resource,value,message",
    [
        ("cpu", -1, "cpu: negative amount -1"),
        ("memory", "2Gx", "memory: '2Gx' is not a quantity"),
        ("memory", "500m", "memory: '500m' is not a whole number of bytes"),
        ("nvidia.com/gpu", 0.5, "nvidia.com/gpu: 0.5 is not a whole number of devices"),
        ("gpu", 1, "unknown resource 'gpu'"),
        ("cpu", True, "cpu: True is not an amount"),
        ("cpu", float("nan"), "cpu: nan is not an amount"),
    ],
)
def test_parse_amount_refusals(resource, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_amount(resource, value)


@pytest.mark.parametrize(
    "resource,amount,text",
    [
        ("memory", 2 * GI, "2Gi"),
        ("memory", 512 * 2**20, "512Mi"),
        ("memory", 1000, "1000"),
        ("cpu", 0.5, "500m"),
        ("cpu", 4.0, "4"),
        ("nvidia.com/gpu", 2, "2"),
    ],
)
def test_format_amount(resource, amount, text):
    assert format_amount(resource, amount) == text


def test_parse_resources():
    assert parse_resources({"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": 1}) == {
        "cpu": 0.25,
        "memory": GI,
        "nvidia.com/gpu": 1,
    }
    assert parse_resources(None) == {}


VISION = quota.VCLimits("vision", {"cpu": 8.0, "memory": 16 * GI, "nvidia.com/gpu": 2}, {"nvidia.com/gpu": 1})
GPU = {"cpu": 1.0, "memory": 2 * GI, "nvidia.com/gpu": 1}
INV = {"cpu": 64.0, "memory": 256 * GI, "nvidia.com/gpu": 8}


@pytest.mark.parametrize(
    "request_,held,user,inventory,cluster,reason",
    [
        (GPU, [], "alice", INV, None, None),
        (
            GPU,
            [quota.Held("bob", GPU), quota.Held("erin", GPU)],
            "alice",
            INV,
            None,
            "VC vision: 2 of 2 nvidia.com/gpu in use",
        ),
        (
            GPU,
            [quota.Held("alice", GPU)],
            "alice",
            INV,
            None,
            "user cap in VC vision: alice uses 1 of 1 nvidia.com/gpu",
        ),
        ({"huawei.com/Ascend910": 1}, [], "alice", INV, None, "this cluster has no huawei.com/Ascend910"),
        ({"cpu": 9.0}, [], "alice", INV, None, "VC vision: 9 cpu asked, its quota is 8"),
        (
            {"memory": 4 * GI},
            [quota.Held("bob", {"memory": 14 * GI})],
            "alice",
            INV,
            None,
            "VC vision: 14Gi of 16Gi memory in use, 4Gi asked",
        ),
        ({"cpu": 0.5}, [quota.Held("bob", {"cpu": 7.5})], "alice", INV, None, None),
        ({"foo.org/tpu": 1}, [], "alice", {"foo.org/tpu": 4}, None, "VC vision has no foo.org/tpu in its quota"),
        (GPU, [], "alice", INV, {"nvidia.com/gpu": 8}, "this cluster: 8 of 8 nvidia.com/gpu in use"),
        (GPU, [], "alice", INV, {"nvidia.com/gpu": 7}, None),
        ({"cpu": 1.0, "nvidia.com/gpu": 0}, [], "alice", {"cpu": 1.0}, None, None),
    ],
)
def test_quota_check(request_, held, user, inventory, cluster, reason):
    assert quota.check(request_, VISION, held, user, inventory, cluster) == reason


def test_used_and_free():
    held = [quota.Held("a", {"cpu": 1.0, "nvidia.com/gpu": 1}), quota.Held("b", {"cpu": 0.5, "x.io/y": 1})]
    used = quota.used({"cpu": 4.0, "nvidia.com/gpu": 1}, held)
    assert used == {"cpu": 1.5, "nvidia.com/gpu": 1, "x.io/y": 1}
    assert quota.free({"cpu": 4.0, "nvidia.com/gpu": 1, "memory": 10}, used) == {
        "cpu": 2.5,
        "nvidia.com/gpu": 0,
        "memory": 10,
    }


@pytest.mark.parametrize(
    "caller,user,refusal",
    [
        (Identity("user", "alice"), "alice", None),
        (
            Identity("user", "alice"),
            "bob",
            "alice acts only as themself: only admins and the platform itself may act for another user",
        ),
        (
            Identity("user", "alice"),
            "nobody-such",
            "alice acts only as themself: only admins and the platform itself may act for another user",
        ),
        (Identity("user", "root", admin=True), "bob", None),
        (Identity("service", "yitong", trusted=True), "bob", None),
        (
            Identity("service", "alice"),
            "alice",
            "alice acts only as themself: only admins and the platform itself may act for another user",
        ),
    ],
)
def test_act_for(caller, user, refusal):
    assert act_for_refusal(caller, user) == refusal


def test_membership_and_release():
    assert is_member(Person("a", groups=("x", "y")), ["y"])
    assert not is_member(Person("a", groups=("x",)), ["y"])
    assert is_member(Person("root", admin=True), [])


@pytest.mark.parametrize(
    "caller,kind,ref,running,refused",
    [
        (Identity("user", "alice"), "server", "alice/", False, False),
        (Identity("user", "alice"), "server", "alice/", True, True),
        (Identity("user", "alice"), "job", "12", False, True),
        (Identity("user", "root", admin=True), "job", "12", False, False),
        (Identity("service", "yitong", trusted=True), "server", "alice/", True, False),
    ],
)
def test_release_rules(caller, kind, ref, running, refused):
    assert (release_refusal(caller, kind, ref, running) is not None) is refused


@pytest.mark.parametrize(
    "caller,kind,refused",
    [
        (Identity("user", "alice"), "server", False),
        (Identity("user", "alice"), "job", True),
        (Identity("user", "root", admin=True), "job", True),
        (Identity("service", "yitong", trusted=True), "job", False),
    ],
)
def test_create_allocation_rules(caller, kind, refused):
    assert (create_allocation_refusal(caller, kind) is not None) is refused


def test_settings_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "backend: local\nhub: {port: 8000}\ngroups: {everyone: [admin]}\n"
        "service: {port: 8011}\n"
        "backends: {local: {inventory: {nvidia.com/gpu: 1}}, kubernetes: {namespace_prefix: y-}}\n"
        "profiles: {cpu-small: {cpu: 1, memory: 2Gi}}\n"
        "vcs: {default: {quota: {cpu: 4, memory: 8Gi}, groups: [everyone], profiles: [cpu-small]}}\n"
    )
    s = load_settings(path, tmp_path / "data")
    assert s.service.port == 8011 and s.backend_inventory() == {"nvidia.com/gpu": 1}
    assert s.profiles["cpu-small"].memory == 2 * GI
    assert s.database_url == f"sqlite:///{tmp_path / 'data' / 'yitong.sqlite'}"


@pytest.mark.parametrize(
    "yaml_text,message",
    [
        ("profiles: {a: {cpu: 1}}\nvcs: {v: {profiles: [a, gone]}}", "VC v offers unknown profiles: gone"),
        (
            "vcs: {v: {quota: {cpu: 1}, colour: red}}",
            "vcs.v.colour: unknown key (a typo? docs/settings.md lists the keys)",
        ),
        # typos that used to start the platform on a guess (SQLite instead of the database named)
        ("database: {uri: 'postgresql://db/yitong'}", "database.uri: unknown key"),
        ("service: {prot: 8011}", "service.prot: unknown key"),
        ("databse: {url: 'postgresql://db/yitong'}", "databse: unknown key"),
        ("hub: {port: 8000}\nauth: {kind: password}\ngroups: {g: [a]}\nfrob: 1", "s.yaml: frob: unknown key (a typo?"),
        # YAML mistakes name the file and the line, not PyYAML's '<unicode string>'
        ("vcs: {v: [1}", "s.yaml: not valid YAML at line 1, column 12: expected ',' or ']', but got '}'"),
        ("vcs: {}\nprofiles: {}\nvcs: {}", "not valid YAML at line 3, column 1: the key 'vcs' is given twice"),
        ("vcs: {Bad: {}}", "'Bad' is not a valid name"),
        ("profiles: {a: {memory: lots}}", "memory: 'lots' is not a quantity"),
        ("backend: mainframe", "backend: Input should be"),
    ],
)
def test_settings_refusals(tmp_path, yaml_text, message):
    path = tmp_path / "s.yaml"
    path.write_text(yaml_text)
    with pytest.raises(SettingsError) as info:
        load_settings(path, tmp_path)
    assert message in str(info.value)
    assert ";" not in str(info.value)  # one problem, one sentence: the hub's sections are not among them


def test_explicit_missing_settings_file(tmp_path):
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml", tmp_path)
