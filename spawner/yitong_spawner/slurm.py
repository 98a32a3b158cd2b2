"""batchspawner's SlurmSpawner without the assumption that hub users are Unix users.

The hub (as root in the embedded default) submits the job itself: `exec_prefix` is empty, the job's
working directory is `home_dir` (`<data_dir>/home/<username>`, set by YitongSpawner), and the
job runs as the submitting Unix user. Multi-user sites keep `exec_prefix = "sudo -E -u {username}"`
and real accounts; then set `c.YitongSlurmSpawner.home_dir` accordingly.
"""

from __future__ import annotations

import os

from batchspawner import SlurmSpawner
from traitlets import Unicode, default

from .backends import allow_root_args

_ACCOUNT_LINE = "{% if account %}#SBATCH --account={{account}}\n{% endif %}"
# batchspawner's SlurmSpawner script ignores req_account and req_qos; add them after the partition
_SCRIPT = SlurmSpawner.batch_script.default_value.replace(
    "{% if runtime ", _ACCOUNT_LINE + "{% if qos %}#SBATCH --qos={{qos}}\n{% endif %}{% if runtime ", 1
)


class YitongSlurmSpawner(SlurmSpawner):
    batch_script = Unicode(
        _SCRIPT,
        help="SlurmSpawner's script plus `--account` (from req_account) and `--qos` (from req_qos).",
    ).tag(config=True)

    exec_prefix = Unicode(
        "",
        help="""Prefix for sbatch/squeue/scancel. Empty: the hub submits as itself.

        For per-user Unix accounts: `c.YitongSlurmSpawner.exec_prefix = "sudo -E -u {username}"`.
        """,
    ).tag(config=True)

    home_dir = Unicode(help="Job working directory and log location (set by YitongSpawner).").tag(config=True)

    @default("home_dir")
    def _default_home_dir(self) -> str:
        return os.path.join(os.getcwd(), ".yitong", "home", self.user.name)

    @default("req_homedir")
    def _req_homedir_default(self) -> str:
        return self.home_dir

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        env["USER"] = self.user.name
        env["HOME"] = self.home_dir
        env.setdefault("SHELL", "/bin/bash")
        return env

    def get_args(self) -> list[str]:
        return allow_root_args(super().get_args())

    async def submit_batch_script(self) -> str:
        os.makedirs(self.home_dir, 0o700, exist_ok=True)
        return await super().submit_batch_script()
