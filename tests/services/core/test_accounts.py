"""Account names per platform instance (core/accounts.py): two platforms on one host never share
a person's account; an untagged ``yt-<name>`` of an older install stays in use where its home is
this platform's; an account of another platform's is refused with a sentence. Real accounts
(``useradd``, as root), removed at teardown."""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess

import pytest

from yitong_services.core.accounts import AccountClash, account_name, ensure_account, instance_tag

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="accounts are made as root (CI runs as root)")


@pytest.mark.parametrize(
    "hub_name, tag, account",
    [
        ("alice", "", "yt-alice"),  # untagged: the name of installs from before tags
        ("alice", "3fa2", "yt3fa2-alice"),
        ("Alice.Smith@corp", "3fa2", "yt3fa2-alice-smith-corp-" + account_name("Alice.Smith@corp")[-6:]),
        ("a" * 40, "lab", "ytlab-" + "a" * 19 + "-" + account_name("a" * 40)[-6:]),
    ],
)
def test_names_carry_the_instance_tag(hub_name, tag, account):
    assert account_name(hub_name, tag) == account and len(account) <= 32


def test_a_tag_is_short_and_plain():
    with pytest.raises(ValueError, match="1 to 6 of a-z and 0-9"):
        account_name("alice", "../x")
    assert instance_tag("/srv/one") != instance_tag("/srv/two") and len(instance_tag("/srv/one")) == 4


@pytest.fixture
def made():
    names: list[str] = []
    yield names
    for name in names:
        subprocess.run(["userdel", name], capture_output=True, check=False)


def _dirs(tmp_path, n: int):
    out = []
    for i in range(n):
        d = tmp_path / f"platform{i}"
        (d / "home").mkdir(parents=True)
        out.append(d)
    return out


@needs_root
def test_two_platforms_give_one_person_two_accounts(tmp_path, made):
    person = f"ac{secrets.token_hex(3)}"
    one, two = _dirs(tmp_path, 2)
    a = ensure_account(person, one / "home" / person, one / "secrets", instance_tag(str(one)))
    made.append(a.name)
    b = ensure_account(person, two / "home" / person, two / "secrets", instance_tag(str(two)))
    made.append(b.name)
    assert a.name != b.name and a.uid != b.uid
    assert pwd.getpwnam(a.name).pw_dir == str(one / "home" / person)
    assert pwd.getpwnam(b.name).pw_dir == str(two / "home" / person)
    # the same platform again: the same account
    assert ensure_account(person, one / "home" / person, one / "secrets", instance_tag(str(one))) == a


@needs_root
def test_an_untagged_account_of_this_platform_stays_and_another_platforms_is_not_taken(tmp_path, made):
    person = f"ac{secrets.token_hex(3)}"
    one, two = _dirs(tmp_path, 2)
    old = ensure_account(person, one / "home" / person, one / "secrets")  # an install from before tags
    made.append(old.name)
    assert old.name == f"yt-{person}"
    again = ensure_account(person, one / "home" / person, one / "secrets", instance_tag(str(one)))
    assert again.name == old.name and again.uid == old.uid  # deprecated, not broken
    other = ensure_account(person, two / "home" / person, two / "secrets", instance_tag(str(two)))
    made.append(other.name)
    assert other.name == account_name(person, instance_tag(str(two))) and other.uid != old.uid


@needs_root
def test_an_account_of_another_platform_with_the_same_tag_is_refused(tmp_path, made):
    person = f"ac{secrets.token_hex(3)}"
    one, two = _dirs(tmp_path, 2)
    a = ensure_account(person, one / "home" / person, one / "secrets", "same")
    made.append(a.name)
    with pytest.raises(AccountClash, match="belongs to another platform on this host"):
        ensure_account(person, two / "home" / person, two / "secrets", "same")
    assert not (two / "home" / person).exists()
