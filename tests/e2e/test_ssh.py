"""SSH into one's own notebook server through the gateway, end to end: the whole embedded
platform (hub, proxy, service, local spawner), keys added with `yt ssh-key`, the real OpenSSH
client (StrictHostKeyChecking against the gateway's host key) and asyncssh's client."""

from __future__ import annotations

import shutil
import subprocess
import time

import asyncssh
import pytest
from ssh_helpers import key_pair

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not shutil.which("ssh"), reason="no OpenSSH client")]
SERVER = "sshbox"


@pytest.fixture(scope="module")
def box(stack, alice_token, bob_token, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ssh")
    keys = {}
    for who, token in (("alice", alice_token), ("bob", bob_token)):
        path, line = key_pair(tmp, f"id_{who}")
        (tmp / f"id_{who}.pub").write_text(line + "\n")
        out = stack.yt(token, "ssh-key", "add", str(tmp / f"id_{who}.pub")).stdout
        assert out.startswith("added key ") and "SHA256:" in out, out
        keys[who] = path
    pub = (stack.data_dir / "ssh" / "ssh_host_ed25519_key.pub").read_text().split()
    known = tmp / "known_hosts"
    known.write_text(f"[127.0.0.1]:{stack.ssh_port} {pub[0]} {pub[1]}\n")
    with stack.hub(alice_token) as hub:
        r = hub.post(f"/users/alice/servers/{SERVER}", json={"vc": "vision", "profile": "cpu-small"})
        assert r.status_code in (201, 202), r.text
    stack.wait_ready(alice_token, "alice", SERVER)
    yield keys, known
    stack.stop_server(alice_token, "alice", SERVER)


def ssh(stack, known, key, login, *command, stdin: str = ""):
    argv = ["ssh", "-F", "/dev/null", "-p", str(stack.ssh_port), "-i", str(key), "-o", "IdentitiesOnly=yes"]
    argv += ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known}"]
    return subprocess.run(
        [*argv, f"{login}@127.0.0.1", *command], input=stdin, capture_output=True, text=True, timeout=90
    )


def test_own_server_runs_commands(stack, box):
    keys, known = box
    login = f"alice+server.{SERVER}"
    r = ssh(stack, known, keys["alice"], login, "whoami; pwd; echo api=$YITONG_VC")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == subprocess.run(["whoami"], capture_output=True, text=True).stdout.strip()
    assert lines[1].startswith("/") and lines[2] == "api=vision", r.stdout
    # exit statuses and stdin pass through
    assert ssh(stack, known, keys["alice"], login, "exit 5").returncode == 5
    r = ssh(stack, known, keys["alice"], login, "tr a-z A-Z", stdin="hello\n")
    assert (r.returncode, r.stdout) == (0, "HELLO\n"), r.stderr
    # the session's token is revoked once it ends: alice's own tokens are unchanged
    with stack.hub(stack.token("alice")) as hub:
        notes = [t["note"] for t in hub.get("/users/alice/tokens").json()["api_tokens"]]
    assert not [n for n in notes if n.startswith("yitong ssh")], notes


def test_others_are_refused(stack, box):
    keys, known = box
    # bob's key does not log in as alice; bob's own name reaches no server of alice's
    r = ssh(stack, known, keys["bob"], f"alice+server.{SERVER}", "true")
    assert r.returncode == 255 and "Permission denied" in r.stderr
    r = ssh(stack, known, keys["bob"], f"bob+server.{SERVER}", "true")
    assert r.returncode == 255 and f"bob has no running server '{SERVER}'" in r.stderr
    r = ssh(stack, known, keys["bob"], "bob+job.1", "true")
    assert r.returncode == 255 and "bob has no job 1" in r.stderr


def test_yt_ssh_dry_run(stack, alice_token, box):
    r = stack.yt(alice_token, "ssh", SERVER, "--dry-run", "--", "hostname")
    argv = r.stdout.split()
    assert argv[:3] == ["ssh", "-p", str(stack.ssh_port)], r.stdout
    assert f"alice+server.{SERVER}@127.0.0.1" in argv and argv[-1] == "hostname"
    assert "yt ssh" not in r.stderr
    r = stack.yt(alice_token, "ssh", "12:1", "--dry-run")
    assert "alice+job.12.1@127.0.0.1" in r.stdout.split()


async def test_interactive_terminal(stack, box):
    keys, known = box
    async with asyncssh.connect(
        "127.0.0.1",
        stack.ssh_port,
        username=f"alice+server.{SERVER}",
        client_keys=[str(keys["alice"])],
        known_hosts=str(known),
    ) as conn:
        proc = await conn.create_process(term_type="xterm", term_size=(120, 40), encoding=None)
        proc.stdin.write(b"echo ans=$((6*7)) cols=$(tput cols)\n")
        seen = b""
        deadline = time.monotonic() + 30
        while b"ans=42 cols=120" not in seen and time.monotonic() < deadline:
            seen += await proc.stdout.read(4096)
        assert b"ans=42 cols=120" in seen, seen
        proc.stdin.write(b"exit\n")
        await proc.wait_closed()


def test_magic_lists_keys_and_prints_the_command(stack, alice_token, box):
    from helpers import ipython

    env = stack.cli_env(alice_token)
    r = ipython("%yt ssh-key ls", "%yt ssh 7 --dry-run -- nvidia-smi", **env)
    assert "id_alice" in r.stdout and "SHA256:" in r.stdout, r.stdout + r.stderr
    assert f"-p {stack.ssh_port}" in r.stdout and "alice+job.7@127.0.0.1 nvidia-smi" in r.stdout
    # without a terminal and without a command, nothing is started
    r = ipython("%yt ssh", **env)
    assert "an interactive shell needs a terminal" in r.stderr + r.stdout
