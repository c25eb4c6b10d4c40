"""The operator image (Dockerfile, built FROM the base named by BASE_IMAGE): upstream's entrypoint and
user, the ansible-operator binary, the Python packages at the base's pinned versions, the runner's
http event plugin, kubernetes.core at the version of requirements.yml, and the project's role."""

import json
import pathlib
import subprocess

import yaml
from conftest import OPERATOR_IMAGE, REPO

ENTRYPOINT = ["/tini", "--", "/usr/local/bin/ansible-operator", "run", "--watches-file=./watches.yaml"]
# What the image's Python reports: every pinned package's version, the runner's event plugins, and
# that the modules the role's in-process plugins need import.
PROBE = """
import importlib.metadata as md, json, sys
import ansible, ansible_runner, kubernetes, requests, yaml, jinja2
print(json.dumps({
    "versions": {d.metadata["Name"].lower(): d.version for d in md.distributions()},
    "runner_plugins": sorted(e.name for e in md.entry_points(group="ansible_runner.plugins")),
    "python": sys.version.split()[0],
}))
"""


def pinned_base_packages() -> dict[str, str]:
    pins = {}
    for line in (REPO / "images/operator-base/requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def run_in_image(unpacked, runc, tmp_path: pathlib.Path, command: list[str]) -> str:
    rootfs, config = unpacked("operator")
    runc.bundle(tmp_path / "bundle", rootfs, config, command=command, network="none")
    result = runc.run(tmp_path / "bundle")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_operator_image_keeps_the_upstream_base_layout(unpacked):
    rootfs, config = unpacked("operator")
    assert config.repo_tags == [OPERATOR_IMAGE]
    assert config.entrypoint == ENTRYPOINT
    assert config.user == "1001"
    assert config.workdir == "/opt/ansible"
    assert "HOME=/opt/ansible" in config.env
    home = rootfs / "opt/ansible"
    assert (home / "watches.yaml").read_text() == (REPO / "watches.yaml").read_text()
    assert (home / "roles/llmmodel/tasks/main.yml").read_text() == (REPO / "roles/llmmodel/tasks/main.yml").read_text()
    assert "ansible:x:1001:0:" in (rootfs / "etc/passwd").read_text()


def test_ansible_operator_in_the_image_is_the_pinned_binary(unpacked, runc, tmp_path):
    local = subprocess.run([str(REPO / "bin/ansible-operator"), "version"], capture_output=True, text=True, check=True)
    in_image = run_in_image(unpacked, runc, tmp_path, ["/usr/local/bin/ansible-operator", "version"])
    assert "v1.42.2" in in_image
    assert in_image == local.stdout


def test_python_packages_are_the_base_images_pinned_versions(unpacked, runc, tmp_path):
    report = json.loads(run_in_image(unpacked, runc, tmp_path, ["python3", "-c", PROBE]))
    pins = pinned_base_packages()
    installed = {name.replace("_", "-"): version for name, version in report["versions"].items()}
    wrong = {name: (version, installed.get(name)) for name, version in pins.items() if installed.get(name) != version}
    assert not wrong, f"pinned vs installed: {wrong}"
    assert "http" in report["runner_plugins"], "ansible-runner's http event plugin (runner-http-plugin/)"


def test_kubernetes_core_is_installed_at_the_required_version(unpacked, runc, tmp_path):
    wanted = {c["name"]: c["version"] for c in yaml.safe_load((REPO / "requirements.yml").read_text())["collections"]}
    listed = json.loads(run_in_image(
        unpacked, runc, tmp_path, ["ansible-galaxy", "collection", "list", "kubernetes.core", "--format", "json"],
    ))
    found = {name: info["version"] for collections in listed.values() for name, info in collections.items()}
    assert found.get("kubernetes.core") == wanted["kubernetes.core"], listed
