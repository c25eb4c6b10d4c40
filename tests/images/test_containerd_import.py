"""`make images-import` against a real containerd (bin/containerd of the real node's tools): a private
instance on its own socket, state and root under pytest's tmp, without its CRI plugin. Marked
`containerd`: `make images-import-test` runs it and fails when bin/containerd or bin/ctr is missing."""

import pathlib
import subprocess
import time

import pytest
from conftest import IMAGES, OPERATOR_IMAGE, PULLER_IMAGE, REPO

pytestmark = pytest.mark.containerd

CONFIG = """version = 3
root = "{dir}/root"
state = "{dir}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
                    "io.containerd.podsandbox.controller.v1.podsandbox"]
[grpc]
  address = "{dir}/containerd.sock"
[ttrpc]
  address = "{dir}/containerd.sock.ttrpc"
"""


@pytest.fixture
def containerd(tmp_path):
    binary, ctr = REPO / "bin/containerd", REPO / "bin/ctr"
    for path in (binary, ctr):
        if not path.exists():
            pytest.fail(f"{path} is missing: build the real node's tools first", pytrace=False)
    (tmp_path / "config.toml").write_text(CONFIG.format(dir=tmp_path))
    log = (tmp_path / "containerd.log").open("wb")
    process = subprocess.Popen([str(binary), "--config", str(tmp_path / "config.toml")], stdout=log, stderr=log)
    socket = tmp_path / "containerd.sock"
    try:
        deadline = time.monotonic() + 30
        while not socket.exists():
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "containerd.log").read_text()
            time.sleep(0.2)
        yield socket, ctr
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_images_import_makes_every_image_present_under_the_users_names(containerd):
    socket, ctr = containerd
    assert (IMAGES / "operator.tar").exists(), "make images first"
    subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), "images-import", f"CONTAINERD_ADDRESS={socket}", f"CTR={ctr}",
         f"IMG={OPERATOR_IMAGE}", f"LLMMODEL_PULLER_IMAGE={PULLER_IMAGE}"],
        check=True,
    )
    listed = subprocess.run(
        [str(ctr), "--address", str(socket), "-n", "k8s.io", "images", "list", "--quiet"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    for name in (OPERATOR_IMAGE, PULLER_IMAGE, "registry.k8s.io/pause:3.10.1"):
        assert name in listed
    assert any(name.startswith("ghcr.io/llm-operator/llama-server:") for name in listed)
