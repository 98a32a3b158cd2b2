"""The SSH gateway against a real hub and a real local job, with the real OpenSSH client
(/usr/bin/ssh, StrictHostKeyChecking against the gateway's host key) and asyncssh's client."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import asyncssh
import pytest
from helpers import free_port
from jobs_helpers import py_job, wait_state
from ssh_helpers import key_pair

from yitong_services.ssh.hostkey import host_key_path

pytestmark = pytest.mark.skipif(not shutil.which("ssh"), reason="no OpenSSH client")


async def ssh(port: int, known_hosts: Path, key: Path, login: str, *command: str, stdin: bytes = b""):
    """``ssh -p PORT LOGIN@127.0.0.1 COMMAND`` -> (exit status, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        "ssh",
        "-F", "/dev/null",
        "-p", str(port),
        "-i", str(key),
        "-o", "IdentitiesOnly=yes",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts}",
        f"{login}@127.0.0.1",
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    return proc.returncode, out.decode(), err.decode()


async def until_worker(port: int, known: Path, key: Path, login: str) -> None:
    """The job is running once its wrapper is; its worker process appears a moment later."""
    for _ in range(300):
        rc, _out, err = await ssh(port, known, key, login, "true")
        if "no running worker" not in err:
            assert rc == 0, err
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{login}: no worker after 30 s")


@pytest.fixture
async def gateway(service_factory, tmp_path):
    port = free_port()
    async with service_factory(ssh={"port": port}, jobs={"poll_interval": 0.2}) as svc:
        pub = host_key_path(svc.ctx.settings.data_dir).with_suffix(".pub").read_text().split()
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
        keys = {}
        for who in ("alice", "bob"):
            path, line = key_pair(tmp_path, f"id_{who}")
            assert (await svc.call(who, "POST", "me/ssh-keys", json={"key": line})).status_code == 201
            keys[who] = path
        keys["stranger"] = key_pair(tmp_path, "id_stranger")[0]
        yield svc, port, known, keys


async def test_host_key_is_private(gateway):
    svc, *_ = gateway
    path = host_key_path(svc.ctx.settings.data_dir)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"


async def test_running_job_worker_shell(gateway):
    svc, port, known, keys = gateway
    r = await svc.call("alice", "POST", "jobs", json=py_job("sleeper", "vision", "import time; time.sleep(120)"))
    assert r.status_code == 201, r.text
    job = await wait_state(svc, "alice", r.json()["id"], states={"running"})
    login = f"alice+job.{job['id']}"
    jobdir = Path(svc.ctx.settings.data_dir).absolute() / "jobs" / str(job["id"])
    try:
        await until_worker(port, known, keys["alice"], login)
        rc, out, err = await ssh(port, known, keys["alice"], login, "pwd; echo id=$YITONG_JOB_ID; exit 7")
        # the job's working directory and environment; the command's exit status passes through
        assert (rc, out.split()) == (7, [str(jobdir), f"id={job['id']}"]), err
        # no secret of the job's (its hub token) nor of the service reaches the shell
        rc, out, err = await ssh(port, known, keys["alice"], login, "env")
        assert rc == 0, err
        names = {line.split("=", 1)[0] for line in out.splitlines()}
        assert "YITONG_JOB_ID" in names
        assert not names & {"YITONG_JOB_TOKEN", "JUPYTERHUB_API_TOKEN", "YT_TOKEN"}, names
        rc, out, _ = await ssh(port, known, keys["alice"], login, "whoami")
        assert (rc, out.strip()) == (0, os.environ.get("USER") or out.strip())
        # stdin passes through
        rc, out, _ = await ssh(port, known, keys["alice"], login, "wc -c", stdin=b"12345")
        assert (rc, out.strip()) == (0, "5")
        # no such rank
        rc, _, err = await ssh(port, known, keys["alice"], login + ".3", "true")
        assert rc == 255 and f"job {job['id']} has no running worker 3" in err
        # bob's key is not alice's; bob's own login does not reach alice's job; an unknown key is refused
        rc, _, err = await ssh(port, known, keys["bob"], login, "true")
        assert rc == 255 and "Permission denied" in err
        rc, _, err = await ssh(port, known, keys["bob"], f"bob+job.{job['id']}", "true")
        assert rc == 255 and f"bob has no job {job['id']}" in err
        rc, _, err = await ssh(port, known, keys["stranger"], login, "true")
        assert rc == 255 and "Permission denied" in err

        # an interactive shell in a terminal (asyncssh's client): the same directory, exit status
        async with asyncssh.connect(
            "127.0.0.1",
            port,
            username=login,
            client_keys=[str(keys["alice"])],
            known_hosts=str(known),
        ) as conn:
            proc = await conn.create_process(term_type="xterm", term_size=(100, 30))
            proc.stdin.write("echo cwd=$(pwd) tty=$(tty >/dev/null && echo yes); exit 3\n")
            output = await asyncio.wait_for(proc.stdout.read(), 30)
            await proc.wait_closed()
            assert f"cwd={jobdir} tty=yes" in output
            assert proc.exit_status == 3
    finally:
        await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")
        await wait_state(svc, "alice", job["id"])
    # an ended job is refused with its state
    rc, _, err = await ssh(port, known, keys["alice"], login, "true")
    assert rc == 255 and "not running" in err


async def test_no_server_no_shell(gateway):
    svc, port, known, keys = gateway
    rc, _, err = await ssh(port, known, keys["alice"], "alice", "true")
    assert rc == 255 and "alice has no running server ''" in err


async def test_where_the_gateway_is(gateway):
    svc, port, known, _keys = gateway
    info = (await svc.call("bob", "GET", "ssh")).json()
    assert info == {"enabled": True, "host": "127.0.0.1", "port": port, "host_key": info["host_key"], "login": "bob"}
    assert known.read_text().split()[1:] == info["host_key"].split()


async def test_a_taken_port_leaves_the_platform_running(service_factory, caplog):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with service_factory(ssh={"port": port}) as svc:
            assert (await svc.call("alice", "GET", "me")).status_code == 200
            assert svc.app.state.ssh.server is None
    assert f"SSH gateway not started on 127.0.0.1:{port}" in caplog.text


async def test_sessions_per_person_are_bounded(service_factory, tmp_path):
    port = free_port()
    async with service_factory(ssh={"port": port, "max_sessions": 1}, jobs={"poll_interval": 0.2}) as svc:
        key, line = key_pair(tmp_path)
        assert (await svc.call("alice", "POST", "me/ssh-keys", json={"key": line})).status_code == 201
        pub = host_key_path(svc.ctx.settings.data_dir).with_suffix(".pub").read_text().split()
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
        r = await svc.call("alice", "POST", "jobs", json=py_job("sleeper", "vision", "import time; time.sleep(120)"))
        job = await wait_state(svc, "alice", r.json()["id"], states={"running"})
        login = f"alice+job.{job['id']}"
        try:
            await until_worker(port, known, key, login)
            async with asyncssh.connect(
                "127.0.0.1", port, username=login, client_keys=[str(key)], known_hosts=str(known)
            ) as conn:
                shell = await conn.create_process(term_type="xterm")
                shell.stdin.write("echo ready\n")
                while "ready" not in await asyncio.wait_for(shell.stdout.readline(), 30):
                    pass
                rc, _, err = await ssh(port, known, key, login, "true")
                assert rc == 255 and "alice has 1 SSH sessions open, the most one person may" in err
                shell.stdin.write("exit\n")
                await shell.wait_closed()
            rc, _, err = await ssh(port, known, key, login, "true")
            assert rc == 0, err
        finally:
            await svc.call("alice", "POST", f"jobs/{job['id']}/cancel")
            await wait_state(svc, "alice", job["id"])


async def test_no_tunnels_no_file_transfer(gateway):
    _svc, port, known, keys = gateway
    async with asyncssh.connect(
        "127.0.0.1", port, username="alice", client_keys=[str(keys["alice"])], known_hosts=str(known)
    ) as conn:
        with pytest.raises(asyncssh.ChannelOpenError):
            await conn.create_connection(asyncssh.SSHTCPSession, "127.0.0.1", port)
        with pytest.raises(asyncssh.ChannelListenError):
            await conn.forward_remote_port("127.0.0.1", 0, "127.0.0.1", 22)
        with pytest.raises((asyncssh.SFTPError, asyncssh.ChannelOpenError, asyncssh.ProcessError, OSError)):
            async with conn.start_sftp_client() as sftp:
                await sftp.listdir(".")
    # a password never logs in
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(
            "127.0.0.1", port, username="alice", password="x", client_keys=None, known_hosts=str(known)
        )
