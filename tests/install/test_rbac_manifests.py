"""The RBAC manifests themselves: no wildcards, and the manager role is exactly the agreed table.

The table is the contract with roles/llmmodel (docs/install.md, "Permissions"): a new API call in the
role needs a new line here and in config/rbac/role.yaml.
"""

import yaml
from install_cluster import REPO

RBAC = REPO / "config" / "rbac"
CRUD = {"get", "list", "watch", "create", "update", "patch", "delete"}
MANAGER_PERMISSIONS = {
    ("inference.ai.example.com", "llmmodels"): CRUD,
    ("inference.ai.example.com", "llmmodels/status"): {"get", "update", "patch"},
    ("inference.ai.example.com", "llmmodels/finalizers"): {"update"},
    ("", "persistentvolumeclaims"): CRUD,
    ("", "services"): CRUD,
    ("apps", "deployments"): CRUD,
    ("batch", "jobs"): CRUD,
    ("autoscaling", "horizontalpodautoscalers"): CRUD - {"update"},
    ("policy", "poddisruptionbudgets"): CRUD - {"update"},
    ("monitoring.coreos.com", "podmonitors"): CRUD - {"update"},  # monitoring: the server's PodMonitor
    ("", "pods"): {"get", "list"},
    ("", "secrets"): {"get"},
    ("", "events"): {"create", "patch"},
    ("", "serviceaccounts"): {"create", "get", "patch"},
    ("rbac.authorization.k8s.io", "roles"): {"create", "get", "patch"},
    ("rbac.authorization.k8s.io", "rolebindings"): {"create", "get", "patch"},
}


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
    assert permissions(role) == MANAGER_PERMISSIONS


def test_every_rbac_file_is_in_the_kustomization():
    listed = set(yaml.safe_load((RBAC / "kustomization.yaml").read_text())["resources"])
    assert listed == {name for name, _ in rbac_documents()}


def test_kinds_without_list_and_watch_bypass_the_proxy_cache():
    """ansible-operator's proxy answers reads from informers (list + watch) unless a kind is blacklisted.

    The manager role grants no list/watch on Secrets and no watch on Pods, which is only enough while
    watches.yaml keeps both out of the cache.
    """
    watch = yaml.safe_load((REPO / "watches.yaml").read_text())[0]
    blacklisted = {(entry["group"], entry["kind"]) for entry in watch.get("blacklist", [])}
    assert {("", "Secret"), ("", "Pod"), ("", "ServiceAccount")} <= blacklisted
    assert {("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding")} <= blacklisted
