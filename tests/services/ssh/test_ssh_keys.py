"""SSH public keys: parsing (pure, tables of cases) and ``/me/ssh-keys`` against a real hub."""

from __future__ import annotations

import subprocess

import pytest
from ssh_helpers import key_pair, public_line

from yitong_services.ssh.keys import KeyRefused, parse_public_key
from yitong_services.ssh.targets import Target, login_for, parse_login

ED = public_line("ed25519")
BODY = ED.split()[1]


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "the key is empty"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "private key"),
        (f"ssh-dss {BODY}", "'ssh-dss' keys are not accepted"),
        (f'from="10.0.0.1" {ED}', "keys are not accepted"),
        ("ssh-ed25519", "no key data"),
        ("ssh-ed25519 not*base64", "not valid base64"),
        (f"ssh-rsa {BODY}", "not a ssh-rsa key"),
        (f"{ED}\n{ED}", "one public key, on one line"),
        ("ssh-ed25519 " + "A" * 9000, "longer than 8192"),
    ],
)
def test_bad_keys_are_refused_with_a_sentence(text, message):
    with pytest.raises(KeyRefused, match=message):
        parse_public_key(text)


def test_small_rsa_is_refused():
    with pytest.raises(KeyRefused, match="RSA keys need 2048 bits or more; this one has 1024"):
        parse_public_key(public_line("rsa", 1024))


@pytest.mark.parametrize("kind,bits", [("ed25519", 256), ("ecdsa", 256), ("rsa", 2048), ("rsa", 3072)])
def test_good_keys_and_their_fingerprints(kind, bits, tmp_path):
    line = public_line(kind, bits if kind == "rsa" else 2048, comment="me@laptop")
    parsed = parse_public_key(line)
    assert (parsed.bits, parsed.comment) == (bits, "me@laptop")
    (tmp_path / "k.pub").write_text(line + "\n")
    # the fingerprint is the one ssh-keygen prints
    out = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "k.pub")], capture_output=True, text=True, check=True)
    assert out.stdout.split()[1] == parsed.fingerprint


@pytest.mark.parametrize(
    "login,target",
    [
        ("alice", Target("alice", "server")),
        ("alice+server.gpu", Target("alice", "server", server="gpu")),
        ("alice+job.12", Target("alice", "job", job_id=12)),
        ("alice+job.12.3", Target("alice", "job", job_id=12, rank=3)),
        ("a+b@corp.org", Target("a+b@corp.org", "server")),
        ("a+b+job.7", Target("a+b", "job", job_id=7)),
        ("alice+job.0", Target("alice+job.0", "server")),
        ("alice+job.99999999999999999999", Target("alice+job.99999999999999999999", "server")),
        ("", None),
        ("x" * 600, None),
        ("al\x00ice", None),
    ],
)
def test_login_names(login, target):
    assert parse_login(login) == target
    if target is not None and target.kind == "job":
        assert login_for(target.person, job_id=target.job_id, rank=target.rank) == login


async def test_key_api(service_factory, tmp_path):
    async with service_factory(ssh={"max_keys": 3}) as svc:
        assert (await svc.call("alice", "GET", "me/ssh-keys")).json() == []
        _path, line = key_pair(tmp_path)
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": line})
        assert r.status_code == 201, r.text
        key = r.json()
        assert key["algorithm"] == "ssh-ed25519" and key["fingerprint"].startswith("SHA256:")
        assert key["comment"] == "id_ed25519"
        # the same key again (another comment) is refused with a sentence
        again = line.rsplit(" ", 1)[0] + " other-comment"
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": again})
        assert r.status_code == 409 and f"already added this key ({key['fingerprint']})" in r.json()["detail"]
        # bob may add the same public key to his own list; he sees only his
        assert (await svc.call("bob", "POST", "me/ssh-keys", json={"key": line})).status_code == 201
        assert len((await svc.call("bob", "GET", "me/ssh-keys")).json()) == 1
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": public_line("rsa", 1024)})
        assert r.status_code == 422 and "2048 bits" in r.json()["detail"]
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": "x" * 9000})
        assert r.status_code == 422
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": ED, "extra": 1})
        assert r.status_code == 422
        for _ in range(2):
            assert (await svc.call("alice", "POST", "me/ssh-keys", json={"key": public_line()})).status_code == 201
        r = await svc.call("alice", "POST", "me/ssh-keys", json={"key": public_line()})
        assert r.status_code == 409 and "the most one person may hold (ssh.max_keys)" in r.json()["detail"]
        # another person's key is not there for bob; alice removes her own
        assert (await svc.call("bob", "DELETE", f"me/ssh-keys/{key['id']}")).status_code == 404
        assert (await svc.call("alice", "DELETE", f"me/ssh-keys/{key['id']}")).status_code == 204
        assert (await svc.call("alice", "DELETE", f"me/ssh-keys/{key['id']}")).status_code == 404
        assert (await svc.call("alice", "DELETE", "me/ssh-keys/0")).status_code == 422
        assert len((await svc.call("alice", "GET", "me/ssh-keys")).json()) == 2
        assert (await svc.call(None, "GET", "me/ssh-keys")).status_code == 401


@pytest.mark.parametrize(
    "target,login",
    [
        ("", "alice"),
        ("gpu", "alice+server.gpu"),
        ("server:12", "alice+server.12"),
        ("12", "alice+job.12"),
        ("12:0", "alice+job.12"),
        ("12:3", "alice+job.12.3"),
    ],
)
def test_yt_ssh_login_names_are_the_gateways(target, login):
    from yitong_lab.ssh.command import login_name

    assert login_name("alice", target) == login
    assert parse_login(login) is not None


def test_yt_ssh_refuses_odd_targets():
    from yitong_lab.ssh.command import login_name, ssh_argv

    with pytest.raises(ValueError, match="neither a server name nor JOB"):
        login_name("alice", "a b;rm")
    assert ssh_argv("alice", "h", 8022, "/k", ["ls"]) == [
        "ssh", "-p", "8022", "-o", "UserKnownHostsFile=/k", "-o", "StrictHostKeyChecking=yes", "alice@h", "ls",
    ]  # fmt: skip


def test_exec_output_is_cut_at_the_markers():
    from yitong_services.ssh.notebook import ExecOutput, exec_line

    line = exec_line("echo 'hi'; exit 3", "ab12")
    assert "YTab12B" not in line and "YTab12E" not in line and "'hi'" not in line  # base64, markers split
    cut = ExecOutput("ab12")
    stream = [line.replace("\r", "\r\n"), "$ YTab", "12B\nhello\nwor", "ld\nYTab12", "E:3\n", "$ "]
    got = "".join(cut.feed(part) for part in stream)
    assert (got, cut.status) == ("hello\nworld", 3)


@pytest.mark.parametrize(
    "section,host",
    [
        ({}, "127.0.0.1"),
        ({"ip": "0.0.0.0"}, "node7"),
        ({"ip": "0.0.0.0", "public_host": "ssh.example.org"}, "ssh.example.org"),
    ],
)
def test_where_people_connect(section, host):
    from yitong_services.ssh.schemas import SSHSettings

    assert SSHSettings(**section).connect_host(lambda: "node7") == host
