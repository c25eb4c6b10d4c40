"""What runs the role in the tests is what runs it in the operator image.

images/operator-base/requirements.txt holds the Python packages of the image's base (its Pipfile.lock),
requirements.yml the collections the Dockerfile installs, the Dockerfile the base's tag. These tests fail
as soon as the venv, the collections Ansible finds or the locally built ansible-operator drift from them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest
import yaml
from packaging.utils import canonicalize_name

from unit_helpers import REPO, VENV_BIN

BASE_REQUIREMENTS = REPO / "images" / "operator-base" / "requirements.txt"
# The packages that run the role: the issue names them; a drift in any of them fails by name.
ROLE_RUNTIME = ["ansible-core", "ansible-runner", "kubernetes", "requests", "requests-unixsocket", "pyyaml", "jinja2"]


def image_pins() -> dict[str, str]:
    pins = {}
    for line in BASE_REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{BASE_REQUIREMENTS.name}: '{line}' is not pinned with =="
            pins[canonicalize_name(name)] = version
    return pins


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_the_image_file_pins_every_package_that_runs_the_role():
    pins = image_pins()
    assert [name for name in ROLE_RUNTIME if name not in pins] == []


@pytest.mark.parametrize("package", ROLE_RUNTIME)
def test_the_venv_runs_the_role_on_the_image_version_of(package):
    wanted = image_pins()[package]
    assert installed(package) == wanted, (
        f"{package}: the venv has {installed(package)}, the operator image {wanted} "
        f"({BASE_REQUIREMENTS.relative_to(REPO)}); run `make venv`"
    )


def test_every_package_of_the_image_is_in_the_venv_at_its_version():
    drift = {name: (installed(name), wanted) for name, wanted in image_pins().items() if installed(name) != wanted}
    assert drift == {}, f"(venv, image) versions that differ: {drift}; run `make venv`"


def test_the_ansible_that_runs_is_the_image_version():
    # What `ansible-playbook` reports, not only the package metadata: a stray copy on sys.path would show here.
    out = subprocess.run([str(VENV_BIN / "ansible"), "--version"], capture_output=True, text=True, check=True).stdout
    assert re.match(r"ansible \[core ([^\]]+)\]", out).group(1) == image_pins()["ansible-core"], out


def test_no_collection_bundle_is_installed_beside_ansible_core():
    # PyPI's `ansible` bundles collections on sys.path, which Ansible also searches: they would hide which
    # kubernetes.core runs. The image has none.
    assert installed("ansible") is None, "the `ansible` bundle is installed in the venv: run `make venv`"
    on_path = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "ansible_collections"))]
    assert on_path == []


def test_ansible_finds_exactly_the_kubernetes_core_of_requirements_yml():
    wanted = {
        entry["name"]: str(entry["version"])
        for entry in yaml.safe_load((REPO / "requirements.yml").read_text())["collections"]
    }
    assert wanted.get("kubernetes.core"), "requirements.yml pins no kubernetes.core"
    listing = subprocess.run(
        [str(VENV_BIN / "ansible-galaxy"), "collection", "list", "--format", "json"],
        capture_output=True, text=True, check=True, env=dict(os.environ),
    )
    found = {}
    for path, collections in json.loads(listing.stdout or "{}").items():
        for name, info in collections.items():
            found.setdefault(name, []).append((info["version"], path))
    for name, version in wanted.items():
        assert [v for v, _ in found.get(name, [])] == [version], (
            f"{name}: Ansible finds {found.get(name)}, the image installs {version} (requirements.yml); "
            "run `make collections`"
        )


def test_the_local_ansible_operator_is_the_image_base_version():
    base = re.search(r"^ARG BASE_IMAGE=quay\.io/operator-framework/ansible-operator:(v\S+)", (REPO / "Dockerfile").read_text(), re.M)
    pinned = re.search(
        r"github\.com/operator-framework/ansible-operator-plugins (v\S+)",
        (REPO / "hack" / "tools" / "ansible-operator" / "go.mod").read_text(),
    )
    assert base and pinned and base.group(1) == pinned.group(1)
