"""What each family of SDK calls (jobs, HPO, SSH) needs of the client it is mixed into.

:class:`yitong_lab.client.Client` provides these; the call families inherit the declarations once,
for the type checker, instead of each repeating them. Standard library only: a kernel imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class ClientCalls:
    """Base of the call mixins (``JobCalls``, ``HpoCalls``, ``SSHCalls``)."""

    if TYPE_CHECKING:  # what the client (yitong_lab.client.Client) provides
        url: str
        timeout: float

        def http(self) -> Any: ...
        def request(self, method: str, path: str, json: Any = None, params: dict | None = None) -> Any: ...
        def create_call(
            self,
            method: str,
            path: str,
            *,
            json: Any = None,
            content: bytes | None = None,
            content_type: str | None = None,
            params: dict | None = None,
            key: str | None = None,
        ) -> Any: ...
        @staticmethod
        def check(response: Any) -> Any: ...
