"""The disk_full and disk_free rule kinds (alerts/kinds.py) and the gauges they read, measured by
the service itself (alerts/disks.py): their PromQL, thresholds, Prometheus's own rule engine on
given series (``promtool test rules``), and the real service's scrape against ``statvfs``. The live
stack's test (test_alerts_live.py) has a real Prometheus fire one from the service's scrape."""

import os
import shutil
import subprocess

import pytest
import yaml
from helpers import require

from yitong_services.alerts.config import Rule, rule_file
from yitong_services.alerts.disks import disk_families
from yitong_services.alerts.kinds import RuleError, check, expression


@pytest.mark.parametrize(
    ("kind", "threshold", "stored", "expected"),
    [
        ("disk_full", None, 90.0, "100 * (1 - yitong_disk_avail_bytes / yitong_disk_size_bytes) >= 90"),
        ("disk_full", 97.5, 97.5, "100 * (1 - yitong_disk_avail_bytes / yitong_disk_size_bytes) >= 97.5"),
        ("disk_free", None, 10.0, "yitong_disk_avail_bytes / 1073741824 < 10"),
        ("disk_free", 0.5, 0.5, "yitong_disk_avail_bytes / 1073741824 < 0.5"),
    ],
)
def test_disk_kinds_render(kind, threshold, stored, expected):
    assert check(kind, threshold, None, "") == stored
    assert expression(kind, stored, None, "", 15) == expected


@pytest.mark.parametrize(
    ("kind", "threshold", "vc", "message"),
    [
        ("disk_full", 0, None, "disk_full rule is % from 1 to 100"),
        ("disk_full", 101, None, "disk_full rule is % from 1 to 100"),
        ("disk_free", 0, None, "disk_free rule is GiB from 0.01 to 1e"),
        ("disk_full", 90, "vision", "a disk_full rule is cluster-wide: leave vc out"),
    ],
)
def test_disk_kinds_refuse(kind, threshold, vc, message):
    with pytest.raises(RuleError, match=message):
        check(kind, threshold, vc, "")


def test_one_sample_per_filesystem():
    """Folders on one filesystem are published once, under the first folder's name; a folder that
    could not be measured is left out."""
    avail, size = disk_families(
        [("data", (1, 100, 1000)), ("store", (1, 100, 1000)), ("jobs", (2, 5, 50)), ("cache", None)]
    )
    assert [(s.labels, s.value) for s in avail.samples] == [({"disk": "data"}, 100), ({"disk": "jobs"}, 5)]
    assert [(s.labels, s.value) for s in size.samples] == [({"disk": "data"}, 1000), ({"disk": "jobs"}, 50)]


PROMTOOL_TEST = """
rule_files: [rules.yml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'yitong_disk_size_bytes{disk="data",job="yitong"}'
        values: '1000+0x20'
      - series: 'yitong_disk_avail_bytes{disk="data",job="yitong"}'
        values: '500+0x4 40+0x16'  # half full, then 96% from 75s on
      - series: 'yitong_disk_size_bytes{disk="store",job="yitong"}'
        values: '1000+0x20'
      - series: 'yitong_disk_avail_bytes{disk="store",job="yitong"}'
        values: '900+0x20'
    alert_rule_test:
      - eval_time: 1m
        alertname: disk
        exp_alerts: []
      - eval_time: 2m
        alertname: disk
        exp_alerts:
          - exp_labels: {severity: critical, yitong_rule: disk, disk: data, job: yitong}
            exp_annotations:
              summary: "disk: a platform disk (data directory and hub database, store, job folders, cache) above 95% full"
              description: "value 96"
"""


def test_promtool_fires_disk_full(tmp_path):
    """Prometheus's rule engine on given series: the data disk's rule fires once it is 96% full,
    the store's disk at 10% does not."""
    promtool = shutil.which("promtool")
    require("promtool", promtool is not None, "install the Debian package prometheus")
    assert promtool
    rules = [Rule("disk", "disk_full", 95, "critical", 0)]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule_file(rules, 15, 15)))
    (tmp_path / "test.yml").write_text(PROMTOOL_TEST)
    p = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0 and "SUCCESS" in p.stdout, p.stdout + p.stderr


async def test_the_service_publishes_its_disks(service):
    """The real service's scrape: its data directory's filesystem as ``statvfs`` sees it."""
    r = await service.call("admin", "GET", "/services/yitong/metrics")
    assert r.status_code == 200, r.text
    samples = {
        line.split(" ")[0]: float(line.split(" ")[1]) for line in r.text.splitlines() if line.startswith("yitong_disk_")
    }
    data_dir = service.app.state.yitong.settings.data_dir
    st = os.statvfs(data_dir)
    assert samples['yitong_disk_size_bytes{disk="data"}'] == st.f_blocks * st.f_frsize
    assert abs(samples['yitong_disk_avail_bytes{disk="data"}'] - st.f_bavail * st.f_frsize) < 256 * 2**20
    # every folder of the test's data directory is on the same filesystem: one sample each
    assert sorted(samples) == ['yitong_disk_avail_bytes{disk="data"}', 'yitong_disk_size_bytes{disk="data"}']
