"""The picker's HTML: hooks for browser tests, disabled profiles with reasons, escaping."""

from __future__ import annotations

import html.parser

from spawner.platform_standin import GiB, profile, vc

from yitong_spawner.form import picker_model, render_picker

OFFER = {
    "user": "alice",
    "vcs": [
        vc(
            "vision",
            [
                profile("cpu-small", display_name="CPU · 1 core", description="JupyterLab"),
                profile(
                    "gpu-2",
                    cpu=4,
                    memory=16 * GiB,
                    accelerator={"type": "nvidia.com/gpu", "count": 2},
                    arch="amd64",
                    available=False,
                    reason="VC vision: 2 of 2 nvidia.com/gpu in use",
                ),
            ],
            description="<script>alert('x')</script>",
            free={"cpu": 7.0, "memory": 14 * GiB, "nvidia.com/gpu": 0},
        ),
    ],
}


class Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parse(text: str) -> list[tuple[str, dict]]:
    c = Collect()
    c.feed(text)
    return c.tags


def test_hooks_and_disabled_reason():
    text = render_picker(picker_model(OFFER))
    tags = parse(text)
    radios = {a["id"]: a for t, a in tags if t == "input"}
    assert radios["yt-profile-vision__cpu-small"]["value"] == "vision/cpu-small"
    assert "checked" in radios["yt-profile-vision__cpu-small"]
    assert "disabled" in radios["yt-profile-vision__gpu-2"] and "checked" not in radios["yt-profile-vision__gpu-2"]
    labels = {a["data-profile"]: a for t, a in tags if t == "label"}
    assert labels["gpu-2"]["class"] == "yt-profile yt-profile-disabled" and labels["gpu-2"]["data-vc"] == "vision"
    assert labels["cpu-small"]["class"] == "yt-profile"
    assert '<div class="yt-reason">VC vision: 2 of 2 nvidia.com/gpu in use</div>' in text
    # amounts as the service words them, in its one style (vcs.quantities.describe)
    assert '<div class="yt-vc-free">Free now: 7 cpu, 14Gi memory, 0 nvidia.com/gpu</div>' in text
    assert '<span class="yt-size">4 cpu, 16Gi memory, 2 nvidia.com/gpu</span>' in text
    assert '<span class="yt-arch">amd64</span>' in text
    assert ("fieldset", {"class": "yt-vc", "data-vc": "vision"}) in tags


def test_tenant_text_is_escaped():
    text = render_picker(picker_model(OFFER))
    assert "<script>alert" not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in text


def test_previous_choice_is_checked():
    offer = {"vcs": [vc("a", [profile("p1"), profile("p2")])]}
    radios = {
        a["id"]: a for t, a in parse(render_picker(picker_model(offer, {"vc": "a", "profile": "p2"}))) if t == "input"
    }
    assert "checked" in radios["yt-profile-a__p2"] and "checked" not in radios["yt-profile-a__p1"]


def test_no_vc_and_platform_error_messages():
    assert 'id="yt-no-vc"' in render_picker(picker_model({"user": "bob", "vcs": []}))
    text = render_picker(error="the platform service is not reachable (ConnectError)")
    assert 'id="yt-platform-error"' in text and "not reachable" in text
    none = render_picker(picker_model({"vcs": [vc("v", [profile("g", available=False, reason="full")])]}))
    assert 'id="yt-none-available"' in none


async def test_spawner_renders_form_from_platform(make_spawner, platform):
    platform.spawn_options["alice"] = OFFER["vcs"]
    spawner = make_spawner("alice")
    text = await spawner.get_options_form()
    assert 'data-profile="gpu-2"' in text
    assert ("GET", "/services/yitong/api/v1/spawn-options?user=alice", "token platform-secret") in platform.requests
    assert spawner.run_options_from_form({"profile": ["vision/cpu-small"]}) == {"vc": "vision", "profile": "cpu-small"}


def test_a_profiles_name_and_description_are_separate_blocks():
    """The name, then the description in an element of its own below it: they never run
    together ("CPU · 1 coreJupyterLab")."""
    text = render_picker(picker_model(OFFER))
    assert '<strong class="yt-profile-name">CPU · 1 core</strong>\n' in text
    assert '<div class="yt-profile-description">JupyterLab</div>' in text
    body = text.split("</style>")[1]
    assert body.index('"yt-profile-name"') < body.index('"yt-profile-description"') < body.index('"yt-spec"')
    assert "yt-profile-description" not in text.split('data-profile="gpu-2"')[1]  # none given: no element
