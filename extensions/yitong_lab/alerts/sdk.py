"""The alert calls of :class:`yitong_lab.client.Client` (admins; stdlib only here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

Rule = dict[str, Any]


class AlertCalls:
    """``alert_status``, ``alert_rules``, ``create_alert_rule``, ``update_alert_rule``,
    ``delete_alert_rule``, ``alert_routes``, ``create_alert_route``, ``delete_alert_route``,
    ``silences``, ``silence``, ``expire_silence``, ``alert_history``."""

    if TYPE_CHECKING:  # what the client (yitong_lab.client.Client) provides

        def request(self, method: str, path: str, json: Any = None, params: dict | None = None) -> Any: ...

    def alert_status(self) -> dict[str, Any]:
        """Whether Prometheus, Alertmanager and the node exporter run, and what to install if not."""
        return self.request("GET", "/alerts/status")

    def alert_rules(self) -> list[Rule]:
        return self.request("GET", "/alerts/rules")

    def create_alert_rule(
        self,
        name: str,
        kind: str,
        threshold: float | None = None,
        *,
        vc: str | None = None,
        expr: str = "",
        severity: str = "warning",
        for_seconds: int = 0,
        description: str = "",
    ) -> Rule:
        """A threshold rule, e.g. ``create_alert_rule("mem", "node_memory", 70, for_seconds=300)``."""
        body = {
            "name": name,
            "kind": kind,
            "threshold": threshold,
            "vc": vc,
            "expr": expr,
            "severity": severity,
            "for_seconds": for_seconds,
            "description": description,
        }
        return self.request("POST", "/alerts/rules", json=body)

    def update_alert_rule(self, name: str, **changes: Any) -> Rule:
        """Change ``threshold``, ``expr``, ``severity``, ``for_seconds`` or ``description``."""
        return self.request("PATCH", f"/alerts/rules/{name}", json=changes)

    def delete_alert_rule(self, name: str) -> None:
        self.request("DELETE", f"/alerts/rules/{name}")

    def alert_routes(self) -> list[dict[str, Any]]:
        return self.request("GET", "/alerts/routes")

    def create_alert_route(
        self, emails: list[str], vc: str | None = None, severities: list[str] | None = None
    ) -> dict[str, Any]:
        """Email ``emails`` about a VC's alerts (``vc`` None: every alert)."""
        return self.request("POST", "/alerts/routes", json={"vc": vc, "emails": emails, "severities": severities or []})

    def delete_alert_route(self, route_id: int) -> None:
        self.request("DELETE", f"/alerts/routes/{int(route_id)}")

    def silences(self) -> list[dict[str, Any]]:
        return self.request("GET", "/alerts/silences")

    def silence(self, matchers: dict[str, str], seconds: int, comment: str) -> dict[str, Any]:
        """Silence the alerts whose labels equal ``matchers`` for ``seconds``."""
        return self.request(
            "POST", "/alerts/silences", json={"matchers": matchers, "seconds": seconds, "comment": comment}
        )

    def expire_silence(self, silence_id: str) -> None:
        self.request("DELETE", f"/alerts/silences/{silence_id}")

    def alert_history(
        self, vc: str | None = None, status: str | None = None, limit: int = 100, offset: int = 0
    ) -> dict[str, Any]:
        params = {k: v for k, v in (("vc", vc), ("status", status)) if v} | {"limit": limit, "offset": offset}
        return self.request("GET", "/alerts/history", params=params)
