"""The puller image (puller/Dockerfile): its CLI runs as its non-root user and really downloads a file
from a server on 127.0.0.1 into a directory, as the pull Job does into the PVC."""

import hashlib
import os

from conftest import PULLER_IMAGE, REPO
from local_http import FileServer


def test_puller_image_is_named_as_the_role_expects_and_runs_as_non_root(unpacked):
    _, config = unpacked("puller")
    assert config.repo_tags == [PULLER_IMAGE]
    assert config.entrypoint == ["llm-model-puller"]
    assert config.user == "10001"


def test_puller_cli_answers_help_without_network(unpacked, runc, tmp_path):
    rootfs, config = unpacked("puller")
    runc.bundle(tmp_path / "bundle", rootfs, config, args=["--help"], network="none")
    result = runc.run(tmp_path / "bundle")
    assert result.returncode == 0, result.stderr
    assert "MODEL_DEST" in result.stdout and "MODEL_SHA256" in result.stdout


def test_puller_downloads_a_file_from_a_local_server_and_checks_its_sha256(unpacked, runc, tmp_path):
    rootfs, config = unpacked("puller")
    served = tmp_path / "served"
    served.mkdir()
    payload = os.urandom(3 * 1024 * 1024 + 17)
    (served / "weights.gguf").write_bytes(payload)
    dest = tmp_path / "volume"
    dest.mkdir()
    os.chown(dest, 10001, 0)  # as a pod's fsGroup would make the PVC writable
    with FileServer(served) as server:
        runc.bundle(
            tmp_path / "bundle", rootfs, config, args=[], network="host-loopback",
            binds={"/model-weights": (dest, True)},
            env={"MODEL_URL": server.url("weights.gguf"), "MODEL_SHA256": hashlib.sha256(payload).hexdigest()},
        )
        result = runc.run(tmp_path / "bundle")
    assert result.returncode == 0, result.stdout + result.stderr
    pulled = dest / "weights.gguf"
    assert pulled.read_bytes() == payload
    assert pulled.stat().st_uid == 10001, "written by the image's user"


def test_the_built_puller_name_is_the_roles_default():
    defaults = (REPO / "roles/llmmodel/defaults/main.yml").read_text()
    assert f"default('{PULLER_IMAGE}', true)" in defaults, "LLMMODEL_PULLER_IMAGE and the role's default differ"
