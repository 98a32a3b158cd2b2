"""VC and profile CRUD by an admin, on SQLite and PostgreSQL."""

GB = 2**30


async def test_seeded_from_settings(service):
    r = await service.call("admin", "GET", "vcs")
    assert r.status_code == 200
    assert [vc["name"] for vc in r.json()] == ["default", "nlp", "vision"]
    vision = next(vc for vc in r.json() if vc["name"] == "vision")
    assert vision["quota"] == {"cpu": 8.0, "memory": 16 * GB, "nvidia.com/gpu": 2, "huawei.com/Ascend910": 2}
    assert vision["used"] == {"cpu": 0.0, "memory": 0, "nvidia.com/gpu": 0, "huawei.com/Ascend910": 0}
    # the quota left, each device capped by the cluster: the inventory has 4 GPUs and no NPU
    assert vision["free"] == vision["quota"] | {"huawei.com/Ascend910": 0}
    r = await service.call("admin", "GET", "profiles/cpu-small")
    assert r.json() == {
        "name": "cpu-small",
        "display_name": "CPU small",
        "description": "",
        "image": "",
        "kernel": "python3",
        "cpu": 1.0,
        "memory": 2 * GB,
        "accelerator": None,
        "arch": None,
    }


async def test_vc_lifecycle(service):
    body = {
        "name": "robots",
        "description": "RL",
        "quota": {"cpu": "500m", "memory": "512M"},
        "groups": ["nlp"],
        "profiles": ["cpu-small"],
        "user_caps": {"cpu": 0.5},
    }
    r = await service.call("admin", "POST", "vcs", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["quota"] == {"cpu": 0.5, "memory": 512_000_000}
    assert (await service.call("admin", "POST", "vcs", json=body)).json() == {"detail": "VC robots already exists"}
    r = await service.call(
        "admin", "PATCH", "vcs/robots", json={"quota": {"cpu": 2, "memory": "1Gi"}, "profiles": ["cpu-small", "gpu-1"]}
    )
    assert r.status_code == 200, r.text
    assert r.json()["quota"] == {"cpu": 2.0, "memory": GB}
    assert r.json()["description"] == "RL"
    r = await service.call("bob", "GET", "vcs/robots")
    assert r.status_code == 200 and r.json()["profiles"] == ["cpu-small", "gpu-1"]
    assert (await service.call("admin", "DELETE", "vcs/robots")).status_code == 204
    r = await service.call("admin", "GET", "vcs/robots")
    assert r.status_code == 404 and r.json() == {"detail": "there is no VC robots"}


async def test_vc_with_unknown_profiles_is_422_naming_them(service):
    body = {"name": "x", "profiles": ["cpu-small", "nope", "gone"]}
    r = await service.call("admin", "POST", "vcs", json=body)
    assert (r.status_code, r.json()) == (422, {"detail": "VC x offers unknown profiles: nope, gone"})
    r = await service.call("admin", "PATCH", "vcs/vision", json={"profiles": ["nope"]})
    assert (r.status_code, r.json()) == (422, {"detail": "VC vision offers unknown profiles: nope"})


async def test_profile_lifecycle(service):
    body = {
        "name": "gpu-2",
        "display_name": "2 GPUs",
        "cpu": 4,
        "memory": "16Gi",
        "accelerator": {"type": "nvidia.com/gpu", "count": 2},
        "arch": "amd64",
    }
    r = await service.call("admin", "POST", "profiles", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["accelerator"] == {"type": "nvidia.com/gpu", "count": 2}
    assert (await service.call("admin", "POST", "profiles", json=body)).status_code == 409
    r = await service.call("admin", "PATCH", "profiles/gpu-2", json={"accelerator": None, "memory": "8Gi"})
    assert r.status_code == 200 and r.json()["accelerator"] is None and r.json()["memory"] == 8 * GB
    await service.call("admin", "PATCH", "vcs/nlp", json={"profiles": ["cpu-small", "gpu-2"]})
    r = await service.call("admin", "DELETE", "profiles/gpu-2")
    assert (r.status_code, r.json()) == (409, {"detail": "profile gpu-2 is offered by VCs: nlp"})
    r = await service.call("admin", "DELETE", "profiles/cpu-small")
    assert r.json() == {"detail": "profile cpu-small is offered by VCs: default, nlp, vision"}
    await service.call("admin", "PATCH", "vcs/nlp", json={"profiles": ["cpu-small"]})
    assert (await service.call("admin", "DELETE", "profiles/gpu-2")).status_code == 204


async def test_user_sees_only_their_vcs_and_profiles(service):
    r = await service.call("alice", "GET", "vcs")
    assert [vc["name"] for vc in r.json()] == ["default", "vision"]
    r = await service.call("bob", "GET", "profiles")
    assert [p["name"] for p in r.json()] == ["cpu-small", "gpu-1"]
    assert (await service.call("dave", "GET", "vcs")).json() == []
    r = await service.call("alice", "GET", "me")
    assert r.json() == {
        "name": "alice",
        "kind": "user",
        "admin": False,
        "groups": ["everyone", "vision"],
        "vcs": ["default", "vision"],
    }
    r = await service.call("service", "GET", "me")
    assert r.json()["kind"] == "service" and r.json()["name"] == "yitong"


async def test_validation_sentences(service):
    cases = [
        ({"name": "Bad_Name"}, "name: 'Bad_Name' is not a valid name"),
        ({"name": "ok", "quota": {"cpu": -1}}, "quota: cpu: negative amount -1"),
        ({"name": "ok", "quota": {"gpu": 1}}, "quota: unknown resource 'gpu'"),
        ({"name": "ok", "quota": {"memory": "2Gx"}}, "quota: memory: '2Gx' is not a quantity"),
        ({"name": "ok", "colour": "red"}, "colour: unknown field"),
    ]
    for body, expected in cases:
        r = await service.call("admin", "POST", "vcs", json=body)
        assert r.status_code == 422, body
        assert r.json()["detail"].startswith(expected), (body, r.json())
