"""Cluster and node logs: parsing, filtering, rotation order and the bounded read."""

from datetime import datetime

import pytest

from yitong_services.ops import logs

HUB = [
    "[I 2026-11-25 10:00:00.001 JupyterHub app:3000] Hub started",
    "[W 2026-11-25 10:05:00.001 JupyterHub base:200] slow spawn of alice",
    "[E 2026-11-25 10:10:00.001 JupyterHub web:100] Uncaught exception",
    "Traceback (most recent call last):",
    '  File "x.py", line 1',
    "[I 2026-11-25 10:15:00.001 JupyterHub log:190] 200 GET /hub/api",
]
SERVICE = [
    "[INFO 2026-11-25 09:00:00,000 yitong_services] started",
    "[ERROR 2026-11-25 10:12:00,000 yitong_services.jobs] job 4 vanished",
]


@pytest.fixture
def logs_dir(tmp_path):
    d = tmp_path / "logs"
    (d / "nodes" / "gpu-01").mkdir(parents=True)
    (d / "hub.log.1").write_text("[I 2026-11-24 23:00:00.000 JupyterHub app:1] yesterday\n")
    (d / "hub.log").write_text("\n".join(HUB) + "\n")
    (d / "yitong-service.log").write_text("\n".join(SERVICE) + "\n")
    (d / "nodes" / "gpu-01" / "agent.log").write_text("[WARNING 2026-11-25 10:01:00,000 agent] disk 91% full\n")
    (d / "notes.txt").write_text("not a log")
    return d


@pytest.mark.parametrize(
    "line,expected",
    [
        ("[I 2026-11-25 10:00:00.001 JupyterHub app:3000] x", ("info", datetime(2026, 11, 25, 10, 0, 0))),
        ("[WARNING 2026-11-25 10:00:00,001 y] x", ("warning", datetime(2026, 11, 25, 10, 0, 0))),
        ("[C 2026-11-25 10:00:00.001 z] x", ("critical", datetime(2026, 11, 25, 10, 0, 0))),
        ("  File 'x.py'", None),
        (
            'ts=2026-11-25T10:00:00.123Z caller=main.go:1 level=warn msg="x"',
            ("warning", datetime(2026, 11, 25, 10, 0, 0)),
        ),
        ("time=2026-11-25T10:00:00.123Z level=ERROR source=a.go msg=x", ("error", datetime(2026, 11, 25, 10, 0, 0))),
        ("[Q 2026-11-25 10:00:00 z] unknown level", None),
    ],
)
def test_parse_header(line, expected):
    assert logs.parse_header(line) == expected


def test_sources(logs_dir):
    assert logs.sources(logs_dir) == {"cluster": ["hub", "yitong-service"], "node": ["gpu-01/agent"]}


@pytest.mark.parametrize("bad", ["../secrets", "a/b/c", "", "hub log", "/etc/passwd"])
def test_source_names_stay_inside(logs_dir, bad):
    with pytest.raises(ValueError, match="is not a log source"):
        logs.files_of(logs_dir, bad)


def test_search_levels_time_text_and_tracebacks(logs_dir):
    every = ["hub", "yitong-service", "gpu-01/agent"]
    found, scanned, truncated = logs.search(logs_dir, every, level="warning")
    assert [(e.source, e.level) for e in found] == [
        ("yitong-service", "error"),
        ("hub", "error"),
        ("hub", "warning"),
        ("gpu-01/agent", "warning"),
    ]
    assert found[1].text.endswith('Traceback (most recent call last):\n  File "x.py", line 1')
    assert not truncated and scanned > 0
    found, _, _ = logs.search(
        logs_dir, every, since=datetime(2026, 11, 25, 10, 6), until=datetime(2026, 11, 25, 10, 11)
    )
    assert [e.text.split("] ")[1] for e in found] == [
        'Uncaught exception\nTraceback (most recent call last):\n  File "x.py", line 1'
    ]
    found, _, _ = logs.search(logs_dir, ["hub"], text="YESTERDAY")  # rotated files are read too
    assert [e.at for e in found] == [datetime(2026, 11, 24, 23, 0)]
    found, _, _ = logs.search(logs_dir, every, limit=2)
    assert len(found) == 2


def test_reads_are_bounded(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    line = "[I 2026-11-25 10:00:00.000 JupyterHub x:1] " + "y" * 200 + "\n"
    (d / "hub.log").write_text(line * 50_000)  # ~12 MB
    found, scanned, truncated = logs.search(d, ["hub"], text="nothing matches", scan_bytes=256 * 1024)
    assert found == [] and truncated and scanned == 256 * 1024


async def test_route(service, tmp_path):
    d = service.ctx.settings.data_dir / "logs"
    d.mkdir(parents=True, exist_ok=True)
    (d / "hub.log").write_text("\n".join(HUB) + "\n")
    r = await service.call("admin", "GET", "logs?source=hub&level=error")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [line["level"] for line in body["lines"]] == ["error"] and "hub" in body["sources"]["cluster"]
    assert (await service.call("admin", "GET", "logs?source=../secrets")).status_code == 422
    assert (await service.call("admin", "GET", "logs?since=yesterday")).status_code == 422
    assert (await service.call("admin", "GET", "logs?level=loud")).status_code == 422
    assert (await service.call("alice", "GET", "logs")).status_code == 403
