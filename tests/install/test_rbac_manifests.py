"""The RBAC manifests themselves: no wildcards, and the manager role is exactly what the role needs.

What it needs is derived from roles/llmmodel (tests/rbac_needs.py, docs/install.md "Permissions"): a
new API call in the role needs a new line in config/rbac/role.yaml, and an unused verb fails.
"""

import sys

import yaml
from install_cluster import REPO

RBAC = REPO / "config" / "rbac"
sys.path.insert(0, str(REPO / "tests"))

import rbac_needs  # noqa: E402  pylint: disable=wrong-import-position


def rbac_documents():
    for path in sorted(RBAC.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            yield path.name, yaml.safe_load(path.read_text())


def permissions(role):
    granted = {}
    for rule in role["rules"]:
        assert not rule.get("resourceNames"), rule
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_no_wildcards_and_no_cluster_admin():
    for name, document in rbac_documents():
        for rule in document.get("rules", []):
            for field in ("apiGroups", "resources", "verbs", "nonResourceURLs"):
                assert "*" not in rule.get(field, []), f"{name}: wildcard in {field}"
        role_ref = document.get("roleRef", {})
        assert role_ref.get("name") not in ("cluster-admin", "admin", "edit"), name


def test_manager_role_is_exactly_the_agreed_permissions():
    role = dict(rbac_documents())["role.yaml"]
    assert role["kind"] == "ClusterRole" and role["metadata"]["name"] == "manager-role"
    assert permissions(role) == rbac_needs.needed()


def test_every_rbac_file_is_in_the_kustomization():
    listed = set(yaml.safe_load((RBAC / "kustomization.yaml").read_text())["resources"])
    assert listed == {name for name, _ in rbac_documents()}


def test_kinds_without_list_and_watch_bypass_the_proxy_cache():
    """ansible-operator's proxy answers reads from informers (list + watch) unless a kind is blacklisted.

    The manager role grants no watch on Pods, ServiceAccounts, Roles and RoleBindings, which is only
    enough while watches.yaml keeps them out of the cache.
    """
    watch = yaml.safe_load((REPO / "watches.yaml").read_text())[0]
    blacklisted = {(entry["group"], entry["kind"]) for entry in watch.get("blacklist", [])}
    assert {("", "Pod"), ("", "ServiceAccount")} <= blacklisted
    assert {("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding")} <= blacklisted
