"""The SSH part of the SDK: public keys (``/me/ssh-keys``) and where the gateway is (``/ssh``),
as :class:`~yitong_lab.client.Client` methods (only the standard library is imported here).

>>> from yitong_lab.client import Client
>>> Client().add_ssh_key(open(os.path.expanduser("~/.ssh/id_ed25519.pub")).read())  # doctest: +SKIP
"""

from __future__ import annotations

from yitong_lab.api_types import SSHInfo, SSHKeyOut  # generated from the OpenAPI document
from yitong_lab.calls import ClientCalls


class SSHCalls(ClientCalls):
    def ssh_keys(self) -> list[SSHKeyOut]:
        return self.request("GET", "/me/ssh-keys")

    def add_ssh_key(self, key: str) -> SSHKeyOut:
        """Add one OpenSSH public key line (the contents of ``id_ed25519.pub``)."""
        return self.request("POST", "/me/ssh-keys", json={"key": key})

    def remove_ssh_key(self, key_id: int) -> None:
        self.request("DELETE", f"/me/ssh-keys/{int(key_id)}")

    def ssh_info(self) -> SSHInfo:
        return self.request("GET", "/ssh")
