"""The configuration of `YitongSpawner` (the traits are its documentation; set them as `c.YitongSpawner.<name>`)."""

from __future__ import annotations

import os
from typing import Any

from jupyterhub.spawner import Spawner
from traitlets import Bunch, CaselessStrEnum, Dict, Float, Integer, Type, Unicode, default, observe
from traitlets.config import LoggingConfigurable

#: ``YitongSpawner`` traits replaced by a key of the settings file (they no longer apply)
DEPRECATED_TRAITS = {
    "accelerator_node_selectors": "devices.<type>.node_selector",
    "accelerator_tolerations": "devices.<type>.tolerations",
    "accelerator_slurm_gres": "devices.<type>.gres",
    "accelerator_visible_devices_env": "devices.<type>.visible_env",
}


def deprecation(trait: str) -> str:
    """The warning for a deprecated trait someone set, naming the settings key that replaces it."""
    return (
        f"YitongSpawner.{trait} is deprecated and ignored: set {DEPRECATED_TRAITS[trait]} in the settings"
        " file instead (one accelerator table for notebooks and jobs, see docs/settings.md)"
    )


def deprecated_config(config: Any) -> list[str]:
    """The warnings for the deprecated traits set in a traitlets config (the hub logs them at start)."""
    section = config.YitongSpawner if "YitongSpawner" in config else {}
    return [deprecation(name) for name in DEPRECATED_TRAITS if name in section]


class YitongSpawnerTraits(LoggingConfigurable):
    platform_api_url = Unicode(
        help="""Base URL of the platform API as the hub reaches it.

        Example: `http://127.0.0.1:8010/services/yitong/api/v1`. Default: `$YITONG_PLATFORM_API_URL`.
        """,
    ).tag(config=True)

    @default("platform_api_url")
    def _default_platform_api_url(self) -> str:
        return os.environ.get("YITONG_PLATFORM_API_URL", "")

    platform_api_token = Unicode(
        help="""Token the spawner presents to the platform API (the `yitong` service's own token,
        trusted to act for any user). Default: `$YITONG_PLATFORM_API_TOKEN`.""",
    ).tag(config=True)

    @default("platform_api_token")
    def _default_platform_api_token(self) -> str:
        return os.environ.get("YITONG_PLATFORM_API_TOKEN", "")

    platform_service_name = Unicode(
        "yitong",
        help="""Name of the hub-managed platform service; the server's token gets
        `access:services!service=<name>` so the lab extension and SDK can call the platform API.""",
    ).tag(config=True)

    platform_timeout = Float(10.0, help="Seconds to wait for one platform API request.").tag(config=True)

    start_concurrency = Integer(
        0,
        min=0,
        help="""How many servers this hub starts at once; more wait in a first-come, first-served
        queue, their position shown on the progress page, and waiting never counts against
        `start_timeout`. A slot is held until the server answers HTTP. 0 (default): 8 per CPU
        core of this machine with the local backend, 32 with Slurm or Kubernetes (their nodes
        do the work; the engine queues). Example: `c.YitongSpawner.start_concurrency = 4`.""",
    ).tag(config=True)

    user_api_url = Unicode(
        help="""Platform API base URL as the user's server reaches it, given to the server as
        `YITONG_API_URL`. Default: `platform_api_url`. On Kubernetes or Slurm use an address
        reachable from pods/compute nodes, e.g. `http://proxy-public/services/yitong/api/v1`.""",
    ).tag(config=True)

    @default("user_api_url")
    def _default_user_api_url(self) -> str:
        return self.platform_api_url

    backend = CaselessStrEnum(
        ["local", "kubernetes", "slurm"],
        default_value="local",
        help="""Where servers run: `local` (processes on the hub's machine), `kubernetes`
        (KubeSpawner; pods in namespace `<kube_namespace_prefix><vc>`), `slurm` (batchspawner's
        SlurmSpawner; jobs in `slurm_partition`). Example: `c.YitongSpawner.backend = "kubernetes"`.""",
    ).tag(config=True)

    backend_class = Type(
        None,
        klass=Spawner,
        allow_none=True,
        help="""Spawner class to delegate to instead of the one `backend` names, e.g. a KubeSpawner
        subclass. Its config section (`c.KubeSpawner...`) applies as usual; the profile's
        overrides for `backend` are applied on top.""",
    ).tag(config=True)

    data_dir = Unicode(
        help="""Yitong's data directory; local and Slurm servers get `<data_dir>/home/<username>`
        as their home. Default: `$YITONG_DATA_DIR` or `./.yitong`.""",
    ).tag(config=True)

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return os.path.abspath(os.environ.get("YITONG_DATA_DIR", ".yitong"))

    kubespawner_overrides = Dict(
        help="""KubeSpawner traits per profile name from z2jh-style profile entries in the settings'
        `profiles` (`kubespawner_override` minus what the platform reserves: volumes, lifecycle
        hooks, environment, tolerations, ...), and each profile's unlisted choice. Set by
        `hubconfig` from the settings file (`yitong_spawner.profile_list.hub_overrides`); the platform's own
        traits (namespace, resources, placement, labels, `YITONG_*` variables) are applied over them.
        Example: `{"learning-data-science": {"override": {"lifecycle_hooks": {...}}, "unlisted": None}}`.""",
    ).tag(config=True)

    kube_namespace_prefix = Unicode(
        "yitong-", help="Kubernetes namespace of a VC's servers: `<prefix><vc>`, e.g. `yitong-vision`."
    ).tag(config=True)

    slurm_partition = Unicode("", help="Slurm partition for server jobs, e.g. `debug`; empty: Slurm's default.").tag(
        config=True
    )

    slurm_account_template = Unicode(
        "{vc}",
        help="""Slurm account for a server job; `{vc}` and `{profile}` are replaced.
        Empty: no `--account` (e.g. a Slurm without an accounting database, where accounts are
        not enforced). Example: `"yt-{vc}"`.""",
    ).tag(config=True)

    # -- deprecated: the accelerator table is the settings file's `devices` section -------------

    accelerator_node_selectors = Dict(
        help="""Deprecated and ignored: set `devices.<type>.node_selector` in the settings file (the
        platform sends each profile's placement in its spawn options).""",
    ).tag(config=True)

    accelerator_tolerations = Dict(
        help="""Deprecated and ignored: set `devices.<type>.tolerations` in the settings file.""",
    ).tag(config=True)

    accelerator_slurm_gres = Dict(
        help="""Deprecated and ignored: set `devices.<type>.gres` in the settings file.""",
    ).tag(config=True)

    accelerator_visible_devices_env = Dict(
        help="""Deprecated and ignored: set `devices.<type>.visible_env` in the settings file.""",
    ).tag(config=True)

    @observe(*DEPRECATED_TRAITS)
    def _deprecated_trait(self, change: Bunch) -> None:
        self.log.warning(deprecation(str(change.name)))
