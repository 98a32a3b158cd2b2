"""core/cgroups.py: the layouts it recognises (fake cgroupfs trees), the files it writes for a
workload (dict literals, v2 and v1), names, and its I/O on a fake tree; the settings and the
sentences of core/confinement.py. The real kernel is tried in tests/services/jobs/test_limits.py
and tests/spawner/test_server_cgroup.py."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from yitong_services.core import cgroups
from yitong_services.core.confinement import ModeError, cgroup_settings, limits
from yitong_services.jobs.attempt_limits import AttemptLimits

MiB = 2**20


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


V2 = {"cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n", "cgroup.subtree_control": ""}
V1 = {f"{c}/cgroup.procs": "" for c in ("memory", "cpu", "pids", "freezer", "devices")}


@pytest.mark.parametrize(
    "files, kind, mounts, missing",
    [
        (V2, "v2", {"": ""}, []),
        ({"cgroup.controllers": "cpu memory\n"}, "v2", {"": ""}, ["pids"]),
        # this machine class: v1 controllers and systemd's empty v2 mount beside them
        ({**V1, "unified/cgroup.controllers": "hugetlb\n"}, "v1", {c: c for c in cgroups.V1_CONTROLLERS}, []),
        (
            {"memory/cgroup.procs": "", "cpu/cgroup.procs": ""},
            "v1",
            {"memory": "memory", "cpu": "cpu"},
            ["pids", "freezer"],
        ),
        ({"unified/cgroup.controllers": "memory cpu pids\n"}, "v2", {"": "unified"}, []),
    ],
)
def test_layouts(tmp_path, files, kind, mounts, missing):
    layout = cgroups.detect(str(tree(tmp_path, files)))
    assert layout.kind == kind and layout.missing == missing
    assert layout.mounts == {c: str(tmp_path / m) if m else str(tmp_path) for c, m in mounts.items()}


@pytest.mark.parametrize(
    "files, why",
    [
        ({}, "no cgroup hierarchy with the memory controller under"),
        ({"cgroup.controllers": "cpu pids\n"}, "has no memory controller"),
        ({"unified/cgroup.controllers": "hugetlb\n", "cpu/cgroup.procs": ""}, "no cgroup hierarchy with the memory"),
    ],
)
def test_no_usable_layout_says_why(tmp_path, files, why):
    layout = cgroups.detect(str(tree(tmp_path, files)))
    assert layout.kind == "none" and why in layout.why and layout.describe() == layout.why


def test_the_files_a_workload_gets():
    limits = {"cpu": 0.2, "memory": 256 * MiB, "pids": 100}
    assert cgroups.files_v2(limits) == {
        "memory.max": "268435456",
        "memory.swap.max": "0",
        "cpu.max": "20000 100000",
        "cpu.weight": "20",
        "pids.max": "100",
    }
    assert cgroups.files_v1(limits) == {
        "memory": {"memory.limit_in_bytes": "268435456", "memory.memsw.limit_in_bytes": "268435456"},
        "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000", "cpu.shares": "205"},
        "pids": {"pids.max": "100"},
        "freezer": {},
    }
    assert cgroups.files_v2({"cpu": None, "memory": None}) == {}


@pytest.mark.parametrize("cpu, quota", [(0.2, 20000), (1, 100000), (2.5, 250000), (0.001, 1000), (0.0049, 1000)])
def test_cpu_is_a_hard_quota_of_each_period(cpu, quota):
    assert cgroups.quota(cpu) == quota


@pytest.mark.parametrize(
    "cpu, v2, v1",
    [(1, 100, 1024), (0.5, 50, 512), (0.2, 20, 205), (0.001, 1, 2), (64, 6400, 65536), (512, 10000, 262144)],
)
def test_a_workloads_weight_follows_its_request(cpu, v2, v1):
    # contended CPUs are shared by request among the instance's workloads (the kubelet's rule),
    # not equally per cgroup: one person's many small jobs do not crowd out another's large one
    assert (cgroups.weight(cpu, v2=True), cgroups.weight(cpu, v2=False)) == (v2, v1)


def test_plans_name_one_directory_per_hierarchy_under_the_instance(tmp_path):
    v2 = cgroups.Layout("v2", {"": "/cg"}, ["pids"])
    assert cgroups.plan(v2, "yitong-abc", "job-7-0", {"cpu": 1, "memory": MiB, "pids": 9}) == {
        "/cg/yitong-abc/job-7-0": {
            "memory.max": "1048576",
            "memory.swap.max": "0",
            "cpu.max": "100000 100000",
            "cpu.weight": "100",
        }
    }
    v1 = cgroups.Layout("v1", {"memory": "/m", "cpu": "/c", "freezer": "/f"}, ["pids"])
    assert cgroups.plan(v1, "yitong-abc", "server-alice", {"cpu": 0.5, "memory": MiB, "pids": 9}) == {
        "/m/yitong-abc/server-alice": {"memory.limit_in_bytes": "1048576", "memory.memsw.limit_in_bytes": "1048576"},
        "/c/yitong-abc/server-alice": {
            "cpu.cfs_period_us": "100000",
            "cpu.cfs_quota_us": "50000",
            "cpu.shares": "512",
        },
        "/f/yitong-abc/server-alice": {},
    }
    assert cgroups.plan(cgroups.Layout("none", {}), "p", "n", {"cpu": 1}) == {}


def test_instance_parents_and_names(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    (tmp_path / "link").symlink_to(a)
    assert cgroups.parent_name(a) == cgroups.parent_name(tmp_path / "link") != cgroups.parent_name(b)
    assert cgroups.parent_name(a).startswith("yitong-") and len(cgroups.parent_name(a)) == 19
    assert cgroups.safe_name("alice") == "alice"
    odd = cgroups.safe_name("al/ice@x")
    assert odd.startswith("al-ice-x-") and "/" not in odd and odd != cgroups.safe_name("al-ice@x")
    assert cgroups.safe_name("..") not in ("..", ".") and cgroups.safe_name("") != ""
    assert AttemptLimits.name(Path("/d/jobs/12/attempt-3")) == "job-12-3"


@pytest.mark.parametrize(
    "text, count",
    [
        ("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2),  # v1 memory.oom_control
        ("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n", 1),  # v2 memory.events
        ("oom_kill_disable 0\nunder_oom 0\n", 0),  # a kernel before 4.13
    ],
)
def test_oom_kill_counts(tmp_path, text, count):
    assert cgroups.parse_count(text, "oom_kill") == count
    (tmp_path / "memory.oom_control").write_text(text)
    assert cgroups.oom_kills([str(tmp_path)]) == count


def test_io_on_a_fake_tree(tmp_path):
    """apply writes the planned files (skipping swap accounting a kernel lacks), enter writes the
    pid, members reads them, a missing cgroup is empty and needs no kill, remove takes it away."""
    layout = cgroups.Layout("v1", {"memory": str(tmp_path / "memory"), "cpu": str(tmp_path / "cpu")}, [])
    planned = cgroups.plan(layout, "yitong-x", "job-1-0", {"cpu": 0.5, "memory": 64 * MiB})
    # what the kernel makes in a new cgroup (a kernel without swap accounting: no memsw file)
    kernel = ["cgroup.procs", "memory.limit_in_bytes", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.shares"]
    for directory in planned:
        os.makedirs(directory, mode=0o700)
        for name in kernel:
            if name.split(".")[0] in ("cgroup", Path(directory).parent.parent.name):
                Path(directory, name).write_text("")
    cgroups.apply(planned)
    memory = tmp_path / "memory" / "yitong-x" / "job-1-0"
    assert (memory / "memory.limit_in_bytes").read_text() == str(64 * MiB)
    assert not (memory / "memory.memsw.limit_in_bytes").exists()
    assert (tmp_path / "cpu" / "yitong-x" / "job-1-0" / "cpu.cfs_quota_us").read_text() == "50000"
    cgroups.enter(planned, 4242)
    assert cgroups.members(list(planned)) == {4242}
    assert cgroups.memory_limit(list(planned)) == 64 * MiB
    gone = cgroups.dirs_of(layout, "yitong-x", "job-9-9")
    assert cgroups.members(gone) == set() and cgroups.kill(gone) and cgroups.remove(gone)
    assert cgroups.children(layout, "yitong-x") == ["job-1-0"]
    for directory in planned:
        for entry in Path(directory).iterdir():
            entry.unlink()
    assert cgroups.remove(list(planned)) and cgroups.children(layout, "yitong-x") == []


def test_a_write_the_kernel_refuses_names_the_file(tmp_path):
    (tmp_path / "job" / "pids.max").mkdir(parents=True)  # a directory: the write fails
    with pytest.raises(OSError, match="cannot write 5 to .*/job/pids.max"):
        cgroups.apply({str(tmp_path / "job"): {"pids.max": "5"}})


def _settings(tmp_path, **local):
    section = SimpleNamespace(model_extra={"mode": "multi-user", **local})
    return SimpleNamespace(backend="local", backends={"local": section}, data_dir=tmp_path)


@pytest.mark.parametrize(
    "local, expected",
    [({}, (True, 4096)), ({"cgroups": False}, (False, 4096)), ({"max_processes": 64}, (True, 64))],
)
def test_settings(tmp_path, local, expected):
    assert cgroup_settings(_settings(tmp_path, **local)) == expected


@pytest.mark.parametrize(
    "local, words",
    [
        ({"cgroups": "yes"}, "backends.local.cgroups must be true or false"),
        ({"max_processes": 3}, "backends.local.max_processes must be a whole number from 16"),
        ({"max_processes": "many"}, "not 'many'"),
        ({"max_processes": True}, "not True"),
    ],
)
def test_bad_settings_are_a_sentence(tmp_path, local, words):
    with pytest.raises(ModeError, match=words):
        cgroup_settings(_settings(tmp_path, **local))


def test_the_sentences(tmp_path, monkeypatch):
    held = limits(_settings(tmp_path, cgroups=False), "multi-user")
    assert held["by"] == "off" and "backends.local.cgroups is false" in held["message"]
    assert limits(_settings(tmp_path), "single-person")["by"] == "none"
    monkeypatch.setattr(cgroups, "usable", lambda parent, root=cgroups.ROOT: cgroups.Layout("none", {}, why="X"))
    held = limits(_settings(tmp_path), "multi-user")
    assert held["by"] == "none" and held["message"].startswith("Limits are not enforced: X, so a notebook")
    v1 = cgroups.Layout("v1", {c: c for c in cgroups.V1_CONTROLLERS}, [])
    monkeypatch.setattr(cgroups, "usable", lambda parent, root=cgroups.ROOT: v1)
    held = limits(_settings(tmp_path, max_processes=99), "multi-user")
    assert held["by"] == "cgroup-v1" and "(cgroup v1 (memory, cpu, pids, freezer))" in held["message"]
    assert "at most 99 processes" in held["message"]
    kube = SimpleNamespace(backend="kubernetes")
    assert limits(kube)["by"] == "kubernetes"


def test_an_attempt_whose_cgroup_cannot_be_made_runs_nothing(tmp_path):
    """launcher._confine turns a failure into ``--refuse``; the wrapper then records why and
    starts nothing (no program, exit record 126 with the sentence)."""
    import json

    from yitong_services.jobs import launcher, wrapper

    here = tmp_path / "attempt-0"
    marker = tmp_path / "ran"
    argv = [str(here), "0", "--", "touch", str(marker)]
    refused = launcher._confine({str(tmp_path / "missing" / "job-1-0"): {"pids.max": "5"}}, argv)
    assert refused[:3] == [str(here), "0", "--refuse"] and "cgroup cannot be made" in refused[3]
    assert refused[4:] == argv[2:]
    assert launcher._confine(None, argv) == argv
    assert wrapper.main(refused, {"PATH": os.environ["PATH"]}) == 126
    record = json.loads((here / "pid").read_text().splitlines()[1])
    assert record["exit_code"] == 126 and "the attempt's cgroup cannot be made" in record["reason"]
    assert not marker.exists()


def test_a_hierarchy_that_cannot_take_the_parent_says_why(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "cgroup.procs").write_text("")
    (tmp_path / "memory" / "yitong-x").write_text("")  # in the way of the instance's parent
    layout = cgroups.prepare(cgroups.detect(str(tmp_path)), "yitong-x")
    assert layout.kind == "none" and layout.why.startswith(f"cgroups under {tmp_path}/memory cannot be created")
