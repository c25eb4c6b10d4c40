"""Fixtures of the image tests: the exported images of `make images`, unpacked once per session, and
a runc to run them. They fail (never skip) when an image or the model has not been built/fetched."""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from image_rootfs import ImageConfig, unpack  # noqa: E402
from runc_container import Runc  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
IMAGES = REPO / ".cache" / "images"
MODEL = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
OPERATOR_IMAGE = os.environ.get("IMG", "ghcr.io/llm-operator/llm-operator:0.1.0")
PULLER_IMAGE = os.environ.get("LLMMODEL_PULLER_IMAGE", "ghcr.io/llm-operator/llm-model-puller:0.1.0")
ROUTER_IMAGE = os.environ.get("LLM_ROUTER_IMAGE", "ghcr.io/llm-operator/llm-router:0.1.0")


def _require(path: pathlib.Path, how: str) -> pathlib.Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: {how}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def runc(tmp_path_factory) -> Runc:
    if not shutil.which("runc"):
        pytest.fail("runc is missing: python3 hack/apt_install.py images", pytrace=False)
    return Runc(tmp_path_factory.mktemp("runc-state"))


@pytest.fixture(scope="session")
def unpacked(tmp_path_factory):
    """unpacked(key) -> (rootfs, config) of .cache/images/<key>.tar, unpacked once per session and
    removed at its end (each is hundreds of MB)."""
    done: dict[str, tuple[pathlib.Path, ImageConfig]] = {}

    def get(key: str) -> tuple[pathlib.Path, ImageConfig]:
        if key not in done:
            archive = _require(IMAGES / f"{key}.tar", "build the images with `make images`")
            rootfs = tmp_path_factory.mktemp(f"rootfs-{key}") / "rootfs"
            done[key] = (rootfs, unpack(archive, rootfs))
        return done[key]

    yield get
    for rootfs, _ in done.values():
        shutil.rmtree(rootfs, ignore_errors=True)


@pytest.fixture(scope="session")
def model() -> pathlib.Path:
    return _require(MODEL, "fetch it with `make model`")


def pytest_configure(config):
    config.addinivalue_line("markers", "containerd: needs bin/containerd and bin/ctr (make images-import-test)")
