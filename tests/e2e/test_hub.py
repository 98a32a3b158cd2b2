"""The embedded platform end to end: login, picker, spawn, isolation, quota, admin."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytestmark = pytest.mark.e2e


def test_login_picker_spawn_lab(stack, admin_token):
    with stack.login("alice") as browser:
        page = browser.get("/hub/spawn").text
        assert 'data-vc="vision"' in page
        assert 'data-vc="nlp"' not in page and "nlp-cpu" not in page
        # tenant-supplied VC descriptions are escaped
        assert "Computer vision &lt;b&gt;team&lt;/b&gt;" in page
        r = browser.post(
            "/hub/spawn",
            data={"profile": "vision/cpu-small", "_xsrf": stack.xsrf(browser)},
        )
        assert r.status_code < 400, r.text[:500]
        srv = stack.wait_ready(admin_token, "alice")
        assert srv["user_options"] == {"vc": "vision", "profile": "cpu-small"}
        lab = browser.get("/user/alice/lab")
        assert lab.status_code == 200 and "JupyterLab" in lab.text
        # the server extension answers through the user's own server
        info = browser.get("/user/alice/yitong/api-info").json()
        assert info["vc"] == "vision" and info["configured"] is True
    [alloc] = [a for a in stack.allocations(admin_token, vc="vision") if a["user"] == "alice"]
    assert alloc["profile"] == "cpu-small" and alloc["kind"] == "server"
    stack.stop_server(admin_token, "alice")
    assert not [a for a in stack.allocations(admin_token, vc="vision") if a["user"] == "alice"]


def test_other_vc_is_invisible_and_refused(stack, bob_token, alice_token):
    with stack.login("bob") as browser:
        page = browser.get("/hub/spawn").text
        assert 'data-vc="nlp"' in page
        assert 'data-vc="vision"' not in page and "gpu-1" not in page
    with stack.hub(bob_token) as hub:
        r = hub.post("/users/bob/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code >= 400, r.text
        assert "vision" in r.text
        assert "bob" not in {s for s in hub.get("/users/bob").json()["servers"]}
    with stack.platform_client(bob_token) as api:
        assert api.get("/vcs/vision").status_code == 404  # another VC answers like an unknown one
        assert api.get("/spawn-options", params={"user": "alice"}).status_code == 403
        names = [vc["name"] for vc in api.get("/vcs").json()]
        assert names == ["nlp"]
        r = api.post(
            "/allocations",
            json={"user": "bob", "vc": "vision", "profile": "cpu-small", "kind": "server", "ref": "bob/"},
        )
        assert r.status_code == 404 and r.json()["detail"] == "there is no VC vision"


@pytest.mark.parametrize(
    "options, words",
    [
        ({"vc": "vision", "profile": "cpu-small", "image": "evil"}, ["image"]),
        ({"vc": "vision", "profile": "nlp-cpu"}, ["nlp-cpu", "vision"]),
        ({"vc": "nope", "profile": "cpu-small"}, ["nope"]),
        ({"vc": "vision", "profile": "npu-1"}, ["huawei.com/Ascend910"]),
    ],
)
def test_crafted_user_options_refused(stack, alice_token, admin_token, options, words):
    with stack.hub(alice_token) as hub:
        r = hub.post("/users/alice/server", json=options)
        assert r.status_code >= 400, r.text
        for word in words:
            assert word in r.text, (word, r.text)
    with stack.hub(admin_token) as hub:
        assert "" not in hub.get("/users/alice").json()["servers"]
    assert not [a for a in stack.allocations(admin_token, vc="vision") if a["user"] == "alice"]


def test_gpu_quota_twenty_concurrent_spawns(stack, admin_token):
    workers = [f"u{i}" for i in range(20)]

    def spawn(user):
        with stack.hub(admin_token) as hub:
            return hub.post(f"/users/{user}/server", json={"vc": "vision", "profile": "gpu-1"})

    with ThreadPoolExecutor(20) as pool:
        responses = list(pool.map(spawn, workers))
    accepted = [u for u, r in zip(workers, responses) if r.status_code in (201, 202)]
    refused = [r for r in responses if r.status_code >= 400]
    assert len(accepted) == 1, [(r.status_code, r.text[:200]) for r in responses]
    assert len(refused) == 19
    assert all("nvidia.com/gpu" in r.text for r in refused), refused[0].text
    winner = accepted[0]
    stack.wait_ready(admin_token, winner)
    gpu = [a for a in stack.allocations(admin_token, vc="vision") if a["resources"].get("nvidia.com/gpu")]
    assert len(gpu) == 1 and gpu[0]["user"] == winner

    # the picker now shows the GPU profile disabled, with the reason
    with stack.login("carol") as browser:
        page = browser.get("/hub/spawn").text
        assert "VC vision: 1 of 1 nvidia.com/gpu in use" in page
    with stack.hub(admin_token) as hub:
        r = hub.post("/users/carol/server", json={"vc": "vision", "profile": "gpu-1"})
        assert r.status_code >= 400 and "1 of 1 nvidia.com/gpu" in r.text

    stack.stop_server(admin_token, winner)
    assert not [a for a in stack.allocations(admin_token, vc="vision") if a["resources"].get("nvidia.com/gpu")]


def progress_messages(stack, token: str, user: str, timeout: float = 120) -> list[str]:
    """The messages of the hub's progress stream for ``user``'s next spawn, until ready or failed
    (a stream that only repeats an earlier spawn's failure is read again)."""
    messages: list[str] = []
    deadline = time.monotonic() + timeout
    with stack.hub(token) as hub:
        while time.monotonic() < deadline:
            with hub.stream("GET", f"/users/{user}/server/progress") as r:
                if r.status_code != 200:  # the spawn has not begun yet
                    time.sleep(0.05)
                    continue
                for line in r.iter_lines():
                    if line.startswith("data:"):
                        event = json.loads(line[5:])
                        if event.get("failed") and not messages:  # an earlier spawn's end: not begun yet
                            time.sleep(0.05)
                            break
                        messages.append(event.get("message", ""))
                        if event.get("ready") or event.get("failed"):
                            return messages
    raise TimeoutError(f"{user}: no end of progress: {messages}")


def test_a_spawn_storm_queues_and_every_server_starts(stack, admin_token):
    """Eight servers asked for at once on a hub that starts two at a time: all eight come up,
    none times out, and a late one sees its place in the start queue on the progress page."""
    users = [f"u{i}" for i in range(8)]

    def spawn(user):
        with stack.hub(admin_token) as hub:
            return hub.post(f"/users/{user}/server", json={"vc": "vision", "profile": "cpu-small"})

    with ThreadPoolExecutor(2 * len(users)) as pool:
        watched = [pool.submit(progress_messages, stack, admin_token, user) for user in users]
        responses = list(pool.map(spawn, users))
        messages = [w.result() for w in watched]
    try:
        assert all(r.status_code in (201, 202) for r in responses), [(r.status_code, r.text[:200]) for r in responses]
        for user in users:
            stack.wait_ready(admin_token, user, timeout=180)
        # whoever came third or later waited, and was told where it stood
        waited = [m for ms in messages for m in ms if m.startswith("Waiting to start:")]
        assert len({tuple(ms) for ms in messages if any(m.startswith("Waiting") for m in ms)}) >= 1, messages
        assert all("2 of 2 starting at a time" in m for m in waited), waited
        assert all("ready" in ms[-1].lower() for ms in messages), messages
    finally:
        for user in users:
            stack.stop_server(admin_token, user)
    assert not [a for a in stack.allocations(admin_token, vc="vision") if a["user"] in users]


def test_a_refused_named_server_leaves_nothing_behind(stack, alice_token, admin_token):
    """Refused before it ever ran: gone from the person's servers. One that ran before stays."""

    def servers() -> set[str]:
        with stack.hub(alice_token) as hub:
            return set(hub.get("/users/alice", params={"include_stopped_servers": "1"}).json()["servers"])

    def wait_gone(name: str) -> None:
        deadline = time.monotonic() + 10
        while name in servers() and time.monotonic() < deadline:
            time.sleep(0.1)

    with stack.hub(alice_token) as hub:
        r = hub.post("/users/alice/servers/phantom", json={"vc": "nlp", "profile": "nlp-cpu"})
        assert r.status_code >= 400 and "nlp" in r.text, r.text
    wait_gone("phantom")
    assert "phantom" not in servers()

    with stack.hub(alice_token) as hub:
        r = hub.post("/users/alice/servers/kept", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(admin_token, "alice", "kept")
    stack.stop_server(admin_token, "alice", "kept")
    with stack.hub(alice_token) as hub:
        r = hub.post("/users/alice/servers/kept", json={"vc": "nlp", "profile": "nlp-cpu"})
        assert r.status_code >= 400, r.text
    time.sleep(1)
    assert "kept" in servers()
    with stack.hub(alice_token) as hub:
        hub.delete("/users/alice/servers/kept", params={"remove": "true"})


def test_admin_vc_crud_shows_at_next_spawn(stack, admin_token, bob_token):
    with stack.platform_client(admin_token) as api:
        r = api.post(
            "/vcs",
            json={
                "name": "speech",
                "description": "ASR",
                "groups": ["nlp"],
                "profiles": ["cpu-small"],
                "quota": {"cpu": 1, "memory": "2Gi"},
            },
        )
        assert r.status_code == 201, r.text
        with stack.login("bob") as browser:
            assert 'data-vc="speech"' in browser.get("/hub/spawn").text
        r = api.patch("/vcs/speech", json={"quota": {"cpu": 0.25, "memory": "2Gi"}})
        assert r.status_code == 200, r.text
        with stack.login("bob") as browser:
            page = browser.get("/hub/spawn").text
            assert "VC speech" in page and "cpu" in page  # cpu-small (0.5 cpu) over the 0.25 quota
        assert api.delete("/vcs/speech").status_code in (200, 204)
        with stack.login("bob") as browser:
            assert 'data-vc="speech"' not in browser.get("/hub/spawn").text
    with stack.platform_client(bob_token) as api:
        r = api.post("/vcs", json={"name": "mine", "groups": ["nlp"], "profiles": [], "quota": {}})
        assert r.status_code == 403


def test_hub_admin_page_links_to_yitong_admin(stack):
    with stack.login("admin") as browser:
        page = browser.get("/hub/admin").text
        assert 'id="yitong-admin-link"' in page and "/services/yitong/console" in page
        r = browser.get("/services/yitong/admin")  # the old page's address: to the console, HubOAuth round trip
        assert r.status_code == 200 and r.url.path == "/services/yitong/console", r.text[:300]
        assert "vision" in r.text and "nlp" in r.text
        assert "<b>team</b>" not in r.text
    with stack.login("alice") as browser:
        assert 'id="yitong-admin-link"' not in browser.get("/hub/home").text
        assert browser.get("/services/yitong/admin").status_code == 403


def test_metrics_and_openapi(stack):
    # /metrics is not open through the proxy: Prometheus scrapes it with a token
    assert httpx.get(f"{stack.url}/services/yitong/metrics", timeout=10).status_code == 401
    metrics = httpx.get(
        f"{stack.url}/services/yitong/metrics", timeout=10, headers={"Authorization": f"token {stack.token('admin')}"}
    ).text
    assert "yitong_vc_quota{" in metrics and 'vc="vision"' in metrics
    spec = httpx.get(f"{stack.url}/services/yitong/openapi.json", timeout=10).json()
    assert "/services/yitong/api/v1/vcs" in spec["paths"] or "/api/v1/vcs" in str(spec["paths"])


def _proc_stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None


def _pid_with_arg(needle: bytes) -> int | None:
    """The pid of the live process with ``needle`` as one of its arguments."""
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if name.isdigit() and needle in f.read().split(b"\0"):
                    return int(name)
        except OSError:
            continue
    return None


def test_what_a_killed_servers_notebook_started_is_stopped_with_it(stack, alice_token, admin_token):
    """yitong_spawner/leftovers.py with the real parts. A notebook starts a long process of its
    own in a new session (a training script, ``nohup``); its server is then killed (SIGKILL, the
    OOM killer's way). The kernel ends by itself (ipykernel watches its parent) but the process it
    started does not. When the hub stops the dead server (the same poll its periodic check runs)
    that process, which inherited the server's mark through the kernel, is stopped too, and the
    allocation is released."""
    from e2e.test_console import execute

    with stack.hub(alice_token) as hub:
        r = hub.post("/users/alice/server", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    base = stack.url + stack.wait_ready(admin_token, "alice")["url"]
    headers = {"Authorization": f"token {alice_token}"}
    kernel = httpx.post(base + "api/kernels", json={"name": "python3"}, headers=headers, timeout=60).json()
    tag = f"import time; time.sleep(600)  # {secrets.token_hex(8)}"
    ws = base.replace("http://", "ws://") + f"api/kernels/{kernel['id']}/channels"
    execute(
        ws,
        alice_token,
        f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {tag!r}], start_new_session=True)",
    )
    deadline = time.monotonic() + 60
    while (pid := _pid_with_arg(tag.encode())) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pid is not None, "the notebook's process was not found"
    kernel_pid = int(_proc_stat(pid)[1])  # its parent
    server = int(_proc_stat(kernel_pid)[1])
    os.kill(server, signal.SIGKILL)
    deadline = time.monotonic() + 10  # the kernel ends by itself (ipykernel watches its parent)
    while _proc_stat(kernel_pid) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    with stack.hub(admin_token) as hub:  # the hub's periodic poll (every 30 s) may have seen the end already
        polled = "" not in hub.get("/users/alice").json().get("servers", {})
    assert polled or _proc_stat(pid) is not None, "the process ended with its server: nothing to show here"
    stack.stop_server(admin_token, "alice")
    deadline = time.monotonic() + 30  # SIGTERM at once, SIGKILL after the 5 s grace
    while (state := _proc_stat(pid)) is not None and state[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state is None or state[0] == "Z", f"the process {pid} alice's notebook started outlived her killed server"
    assert not [a for a in stack.allocations(admin_token, vc="vision") if a["user"] == "alice"]
