"""The reconciler drops server allocations whose server the hub no longer runs."""

from yitong_services.vcs.stale_servers import reconcile_once


async def test_reconciler_drops_only_stopped_servers(service, hub):
    hub.api("POST", "/users/alice/server")
    try:
        for user, ref in [("alice", "alice/"), ("bob", "bob/")]:
            vc = "vision" if user == "alice" else "nlp"
            assert (await service.allocate(user, vc, "cpu-small", ref)).status_code == 201
        assert (await service.allocate("bob", "nlp", "cpu-small", "train-1", kind="job")).status_code == 201
        dropped = await reconcile_once(service.ctx)
        assert [(a["user"], a["ref"]) for a in dropped] == [("bob", "bob/")]
        r = await service.call("admin", "GET", "allocations")
        assert sorted(a["ref"] for a in r.json()) == ["alice/", "train-1"]
    finally:
        hub.api("DELETE", "/users/alice/server")
    dropped = await reconcile_once(service.ctx)
    assert [a["ref"] for a in dropped] == ["alice/"]
