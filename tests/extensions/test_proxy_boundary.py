"""Per-person web services are reachable only through their own server, tried from inside.

- Pure: the kernel's listener tables parsed (``/proc/net/tcp{,6}`` lines), and which targets a
  server may proxy to (table of cases).
- A real Jupyter server (pytest-jupyter) with jupyter-server-proxy and yitong_lab: every route
  whose handler is a jupyter-server-proxy ``ProxyHandler`` is the guarded one.
- Multi-user (root, as CI runs): two throwaway system accounts (``useradd --system``, removed
  after), a real ``jupyter server`` process as each. A's server starts code-server (the real one
  where ``make code-server`` installed it, as CI does; else a STAND-IN program with code-server's
  socket flags) and the real TensorBoard through its own proxy; then B, as a process of B's account, connects
  to A's sockets and lists A's socket folder (EACCES), and asks B's own server's proxy for A's
  listener in every URL form, over HTTP and as a websocket upgrade (403 with the sentence), while
  B's proxy still reaches B's own listener. A's services hold no TCP port but the server's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
import pytest_jupyter.jupyter_server as _pj
from helpers import free_port
from jupyter_server_proxy.handlers import ProxyHandler
from test_code_server_launch import STAND_IN

from yitong_lab.proxies import code_server, listeners
from yitong_lab.proxies import tensorboard as tb
from yitong_lab.server.proxy_guard import OwnServicesOnly, target_refusal

globals().update(
    {
        name: value
        for name, value in vars(_pj).items()
        if type(value).__name__ == "FixtureFunctionDefinition" and name != "jp_asyncio_loop"
    }
)

REAL_CODE_SERVER = code_server.PREFIX / "bin" / "code-server"
TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1 0 100 0 0 10 0
   1: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2 1 0 100 0 0 10 0
   2: 0100007F:1F92 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1003        0 3 1 0 100 0 0 10 0
   3: 0501A8C0:1F93 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1004        0 4 1 0 100 0 0 10 0
   4: 0200007F:1F94 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 5 1 0 100 0 0 10 0
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1005        0 6 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:1F95 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 7 1 0 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F96 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 8 1 0 100 0 0 10 0
"""
ROWS = listeners.parse_table(TCP) + listeners.parse_table(TCP6)


def test_parse_tables():
    assert ROWS == [
        listeners.Listener("127.0.0.1", 8080, 1001),
        listeners.Listener("0.0.0.0", 8081, 1002),  # row 2 is a connection, not a listener
        listeners.Listener("192.168.1.5", 8083, 1004),
        listeners.Listener("127.0.0.2", 8084, 1001),
        listeners.Listener("::1", 8080, 1005),
        listeners.Listener("::", 8085, 1001),
        listeners.Listener(str(ipaddress.ip_address("::ffff:127.0.0.1")), 8086, 1001),
    ]


def test_netlink_and_proc_agree_on_real_listeners():
    import socket

    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6, socket.socket() as connected:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        connected.connect(v4.getsockname())  # a connection on the same port is not a listener
        mine = {listeners.Listener("127.0.0.1", v4.getsockname()[1], os.geteuid())}
        mine.add(listeners.Listener("::1", v6.getsockname()[1], os.geteuid()))
        over_netlink = listeners.read_diag(socket.AF_INET) + listeners.read_diag(socket.AF_INET6)
        from_proc = listeners.read_tables()
        assert mine <= set(over_netlink) and mine <= set(from_proc)
        assert sorted(over_netlink, key=str) == sorted(from_proc, key=str)
        assert listeners.refusal(v6.getsockname()[1], os.geteuid(), listeners.read_listeners()) is None


def test_diag_records_parsed():
    record = bytes([10, 10, 0, 0]) + (8080).to_bytes(2, "big") + bytes(2)  # AF_INET6, LISTEN, sport
    record += ipaddress.ip_address("::1").packed + bytes(16 + 4 + 8) + bytes(12)
    record += (1001).to_bytes(4, "little") + bytes(4)
    message = listeners.HEADER.pack(16 + len(record), listeners.SOCK_DIAG_BY_FAMILY, 2, 1, 0) + record
    done = listeners.HEADER.pack(20, listeners.NLMSG_DONE, 2, 1, 0) + bytes(4)
    assert listeners.parse_diag(message + done) == ([listeners.Listener("::1", 8080, 1001)], True)
    assert listeners.parse_diag(message) == ([listeners.Listener("::1", 8080, 1001)], False)
    error = listeners.HEADER.pack(36, listeners.NLMSG_ERROR, 0, 1, 0) + (-1).to_bytes(4, "little", signed=True)
    with pytest.raises(OSError):
        listeners.parse_diag(error + bytes(16))


@pytest.mark.parametrize(
    ("host", "port", "uid", "status", "words"),
    [
        ("localhost", 8081, 1002, None, ""),  # its own, on the wildcard address
        ("127.0.0.1", 8085, 1001, None, ""),  # its own on ::, dual stack
        ("localhost", 8086, 1001, None, ""),  # a v4-mapped loopback
        ("localhost", 8084, 1001, None, ""),  # anywhere in 127/8
        ("localhost", 8081, 1001, 403, "listened on by another account"),
        ("localhost", 8080, 1001, 403, "listened on by another account"),  # and someone else on ::1
        ("localhost", 8083, 1004, 502, "nothing listens on localhost port 8083"),  # not on loopback
        ("localhost", 9999, 1001, 502, "nothing listens"),
        ("example.org", 8081, 1002, 403, "is not this machine's loopback"),
        ("192.168.1.5", 8083, 1004, 403, "is not this machine's loopback"),
    ],
)
def test_target_refusal(host, port, uid, status, words):
    refused = target_refusal(host, port, uid, ROWS)
    assert (refused and refused[0]) == status
    assert words in (refused[1] if refused else "")


# -- every proxy route of a real server is the guarded one --------------------------------------


@pytest.fixture
async def jp_asyncio_loop():
    yield asyncio.get_running_loop()


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"yitong_lab": True, "jupyter_server_proxy": True}}}


def proxy_rules(router):
    for rule in getattr(router, "rules", []):
        if hasattr(rule.target, "rules"):
            yield from proxy_rules(rule.target)
        elif isinstance(rule.target, type) and issubclass(rule.target, ProxyHandler):
            yield rule


async def test_every_proxy_route_is_guarded(jp_serverapp, jp_fetch):
    rules = list(proxy_rules(jp_serverapp.web_app.default_router))
    patterns = {rule.matcher.regex.pattern for rule in rules}
    # the four URL forms, the named entries (code-server, tensorboard) and the per-job boards
    for form in (r"/proxy/(\d+)(/.*|)", r"/proxy/absolute/([^/:@]+):(\d+)(/.*|)", "code-server", "tensorboard"):
        assert any(form in pattern for pattern in patterns), (form, patterns)
    assert any("yitong/jobs" in pattern for pattern in patterns)
    assert all(issubclass(rule.target, OwnServicesOnly) for rule in rules), [r.target for r in rules]
    with pytest.raises(Exception) as info:  # the platform's own port is root's: this server runs as root
        await jp_fetch("proxy", "1", "x")
    assert info.value.code == 502 and b"nothing listens on localhost port 1" in info.value.response.body


# -- as one person against another (multi-user, root) ---------------------------------------------

multi_user = pytest.mark.skipif(os.geteuid() != 0, reason="system accounts need root (CI runs as root)")


class Person:
    def __init__(self, name: str, work: Path):
        self.name = name
        self.home = work / name
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--home-dir",
                str(self.home),
                "--shell",
                "/usr/sbin/nologin",
                name,
            ],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(name)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.home.mkdir(mode=0o700)
        os.chown(self.home, self.uid, self.gid)
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.procs: list[subprocess.Popen] = []

    def env(self, work: Path, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": self.name,
            "TMPDIR": str(work / "tmp"),  # shared, as /tmp: only the server's own folder in it guards
            "JUPYTER_CONFIG_DIR": str(self.home / ".jupyter"),
            "JUPYTER_DATA_DIR": str(self.home / ".local"),
            "JUPYTER_RUNTIME_DIR": str(self.home / ".runtime"),
            **extra,
        }

    def start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=self.home,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            stdout=subprocess.DEVNULL,
            stderr=open(self.home.parent / f"{self.name}.log", "ab"),
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def run(self, code: str, *args: str) -> dict:
        """Python code run as this person (a process of their account); its stdout's JSON."""
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/user/{self.name}/"

    def get(self, path: str, **kw) -> httpx.Response:
        headers = {"Authorization": f"token {self.token}", **kw.pop("headers", {})}
        return httpx.get(self.url + path, headers=headers, timeout=120, **kw)

    def stop(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        for pid in pids_of(self.uid):  # what the servers started in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        subprocess.run(["userdel", self.name], capture_output=True, check=False)


def commands_of(uid: int) -> list[list[str]]:
    found = []
    for pid in pids_of(uid):
        with contextlib.suppress(OSError):
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0"))
    return found


def pids_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
    return found


def wait_until_up(person: Person, work: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if person.get("api/status").status_code == 200:
                return
        assert all(proc.poll() is None for proc in person.procs), (work / f"{person.name}.log").read_text()[-3000:]
        time.sleep(0.3)
    raise TimeoutError((work / f"{person.name}.log").read_text()[-3000:])


def serve_secret(person: Person, work: Path) -> int:
    """A plain HTTP listener of ``person`` on localhost: their files (``secret.txt`` in it)."""
    served = person.home / "served"
    served.mkdir()
    (served / "secret.txt").write_text(f"{person.name}'s secret\n")
    shutil.chown(served, person.uid, person.gid)
    shutil.chown(served / "secret.txt", person.uid, person.gid)
    port = free_port()
    person.start(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(served), str(port)],
        person.env(work),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/secret.txt", timeout=5).status_code == 200:
                return port
        time.sleep(0.2)
    raise TimeoutError("http.server")


@pytest.fixture(scope="module")
def two_people():
    if os.geteuid() != 0:
        pytest.skip("system accounts need root (CI runs as root)")
    work = Path(tempfile.mkdtemp(prefix="yt-proxy-boundary-", dir="/var/tmp"))
    work.chmod(0o711)
    (work / "tmp").mkdir(mode=0o1777)
    (work / "tmp").chmod(0o1777)
    tools = REAL_CODE_SERVER.parent.parent
    if not os.access(REAL_CODE_SERVER, os.X_OK):  # a STAND-IN "installed" where make code-server puts it
        tools = work / "tools" / "code-server"
        (tools / "bin").mkdir(parents=True)
        (tools / "bin" / "code-server").write_text(STAND_IN.format(python=sys.executable))
        for path in (work / "tools", tools, tools / "bin", tools / "bin" / "code-server"):
            path.chmod(0o755)
    tag = secrets.token_hex(3)
    people = []
    try:
        for letter in "ab":
            people.append(Person(f"ytpx{tag}{letter}", work))
        for person in people:
            person.start(
                [
                    sys.executable,
                    "-m",
                    "jupyter_server",
                    "--no-browser",
                    "--ip=127.0.0.1",
                    f"--port={person.port}",
                    f"--ServerApp.base_url=/user/{person.name}/",
                    f"--IdentityProvider.token={person.token}",
                ],  # yitong_lab and jupyter_server_proxy: enabled by this installation's config
                person.env(work, YITONG_CODE_SERVER_PREFIX=str(tools)),
            )
        for person in people:
            wait_until_up(person, work)
        yield work, people[0], people[1]
    finally:
        for person in people:
            person.stop()
        shutil.rmtree(work, ignore_errors=True)


def private_folder(person: Person, work: Path) -> Path:
    (folder,) = [p for p in (work / "tmp").iterdir() if p.name.startswith("yt-web-") and p.stat().st_uid == person.uid]
    return folder


ATTACK_SOCKET = """
import errno, json, os, socket, sys
folder, name = sys.argv[1], sys.argv[2]
out = {}
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(os.path.join(folder, name))
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    out["connect"] = s.recv(200).decode(errors="replace")
except OSError as e:
    out["connect"] = errno.errorcode[e.errno]
try:
    out["list"] = os.listdir(folder)
except OSError as e:
    out["list"] = errno.errorcode[e.errno]
print(json.dumps(out))
"""


@multi_user
@pytest.mark.timeout(600)
def test_another_person_cannot_open_the_sockets_of_code_server_and_tensorboard(two_people):
    work, alice, mallory = two_people
    vscode = alice.get("code-server/")  # through alice's own server, with her token
    assert vscode.status_code in (200, 302), vscode.text[:300]  # the real one redirects to ?folder=
    (argv,) = [cmd for cmd in commands_of(alice.uid) if "--socket-mode" in cmd]
    assert argv[argv.index("--socket-mode") + 1] == "600" and "--disable-proxy" in argv
    assert "--bind-addr" not in argv
    sockets = {"code-server": argv[argv.index("--socket") + 1]}
    if tb.installed():
        board = alice.get("tensorboard/")
        assert board.status_code == 200 and "<tb-webapp>" in board.text, board.text[:300]
        sockets["tensorboard"] = str(private_folder(alice, work) / "tensorboard.sock")
    folder = private_folder(alice, work)
    for name, path in sockets.items():
        assert Path(path).parent == folder and Path(path).exists(), name
        attack = mallory.run(ATTACK_SOCKET, str(folder), Path(path).name)
        assert attack == {"connect": "EACCES", "list": "EACCES"}, (name, attack)
    # what alice's services listen on: no TCP port but her server's own (no data server, no code-server)
    assert {row.port for row in listeners.read_tables() if row.uid == alice.uid} == {alice.port}


ATTACK_WEBSOCKET = """
import json, socket, sys
port, path, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.sendall((f"GET {path} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nAuthorization: token {token}\\r\\n"
           "Connection: Upgrade\\r\\nUpgrade: websocket\\r\\nSec-WebSocket-Version: 13\\r\\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n\\r\\n").encode())
data = b""
while b"\\r\\n\\r\\n" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(json.dumps({"status": data.split(b"\\r\\n")[0].decode()}))
"""


@multi_user
@pytest.mark.timeout(600)
def test_a_server_proxies_only_to_its_own_ports(two_people):
    work, alice, mallory = two_people
    alices = serve_secret(alice, work)  # alice's service on localhost (her own dash app, say)
    mallorys = serve_secret(mallory, work)
    # mallory's own server: her own listener is proxied (the proxy works) ...
    own = mallory.get(f"proxy/{mallorys}/secret.txt")
    assert own.status_code == 200 and own.text == f"{mallory.name}'s secret\n"
    # ... alice's, and alice's Jupyter server, in every form jupyter-server-proxy has, are not
    for target in (alices, alice.port):
        for path in (
            f"proxy/{target}/secret.txt",
            f"proxy/absolute/{target}/secret.txt",
            f"proxy/localhost:{target}/secret.txt",
            f"proxy/127.0.0.1:{target}/secret.txt",
            f"proxy/absolute/127.0.0.1:{target}/secret.txt",
        ):
            refused = mallory.get(path)
            assert refused.status_code == 403, (path, refused.status_code, refused.text[:200])
            assert f"port {target} on localhost is not this server&#39;s" in refused.text, refused.text[:500]
            assert "secret" not in refused.text
        # a websocket, refused before the upgrade
        upgrade = mallory.run(
            ATTACK_WEBSOCKET, str(mallory.port), f"/user/{mallory.name}/proxy/{target}/", mallory.token
        )
        assert upgrade["status"].startswith("HTTP/1.1 403"), upgrade
    # the other way round: alice's server does not send her requests (her cookies) to mallory's port
    lured = alice.get(f"proxy/{mallorys}/secret.txt")
    assert lured.status_code == 403 and "secret" not in lured.text
