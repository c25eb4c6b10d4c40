"""The manager's ClusterRole grants what the llmmodel role uses, and nothing else.

The kinds are read off the role itself: the objects its templates render (its children), and every kind
its tasks, modules and module_utils name with a literal apiVersion and kind (reads, status writes,
Events). A new template (an HPA, a PDB) fails here until config/rbac/role.yaml grants it, and a grant
that nothing in the role uses any more fails too. tests/install/test_rbac_manifests.py pins the verbs of
the same table, and tests/install/test_deploy.py asks the API server what the deployed account may do.
"""

from __future__ import annotations

import re

import yaml

from unit_helpers import REPO, ROLE

CLUSTER_ROLE = REPO / "config" / "rbac" / "role.yaml"
WATCHED_GROUP = "inference.ai.example.com"
CRUD = {"get", "list", "watch", "create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}

# A literal apiVersion followed by a literal kind, as the role writes them: YAML keys
# (`api_version: v1` / `kind: Pod` on the next line), flow mappings ({api_version: v1, kind: Pod}),
# Jinja keyword arguments (api_version='v1', kind='Pod') and Python (api_version="v1", kind="Event").
API_KIND = re.compile(
    r"""['"]?api_?[vV]ersion['"]?\s*[:=]\s*['"]?(?P<api>[a-z0-9.]*/?v[0-9a-z]+)['"]?\s*,?\s*"""
    r"""['"]?kind['"]?\s*[:=]\s*['"]?(?P<kind>[A-Z]\w+)"""
)


def plural(kind: str) -> str:
    """The resource name of a kind, as the API server's default pluralisation spells it."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


def group_resource(api_version: str, kind: str) -> tuple[str, str]:
    group = api_version.rpartition("/")[0]
    return group, plural(kind)


def rendered_children() -> set[tuple[str, str]]:
    """(group, resource) of every Kubernetes object the role's templates render."""
    children = set()
    for template in sorted((ROLE / "templates").glob("*.yaml.j2")):
        text = template.read_text()
        api = re.search(r"^apiVersion:\s*(\S+)", text, re.M)
        kind = re.search(r"^kind:\s*(\w+)", text, re.M)
        if api and kind:
            children.add(group_resource(api.group(1), kind.group(1)))
    return children


def named_kinds() -> set[tuple[str, str]]:
    """(group, resource) of every kind the role's tasks, modules and module_utils name literally."""
    named = set()
    files = [*(ROLE / "tasks").glob("*.yml"), *(ROLE / "library").glob("*.py"), *(ROLE / "module_utils").glob("*.py")]
    for path in files:
        for match in API_KIND.finditer(path.read_text()):
            named.add(group_resource(match.group("api"), match.group("kind")))
    return named


def granted() -> dict[tuple[str, str], set[str]]:
    role = yaml.safe_load(CLUSTER_ROLE.read_text())
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


def test_the_role_is_read_correctly():
    # The derivation must see what the role is known to do, or the comparisons below prove nothing.
    assert {("", "persistentvolumeclaims"), ("batch", "jobs"), ("apps", "deployments"), ("", "services")} <= rendered_children()
    assert {("", "pods"), ("", "secrets"), ("", "events"), (WATCHED_GROUP, "llmmodels")} <= named_kinds()


def test_the_cluster_role_grants_exactly_the_kinds_the_role_uses():
    used = rendered_children() | named_kinds()
    top_level = {resource for resource in granted() if "/" not in resource[1]}
    assert sorted(used - top_level) == [], "used by roles/llmmodel but not granted in config/rbac/role.yaml"
    assert sorted(top_level - used) == [], "granted in config/rbac/role.yaml but used nowhere in roles/llmmodel"


def test_only_the_watched_kind_has_subresources():
    # status: the role writes it (llmmodel_status); finalizers: watches.yaml's finalizer.
    subresources = {resource for resource in granted() if "/" in resource[1]}
    assert subresources == {(WATCHED_GROUP, "llmmodels/status"), (WATCHED_GROUP, "llmmodels/finalizers")}


def blacklisted() -> set[tuple[str, str]]:
    """(group, resource) of the kinds watches.yaml keeps out of ansible-operator's cache."""
    watch = yaml.safe_load((REPO / "watches.yaml").read_text())[0]
    return {group_resource(f"{e['group']}/{e['version']}" if e["group"] else e["version"], e["kind"]) for e in watch.get("blacklist", [])}


# Children the role only applies: blacklisted (no informer, so neither list nor watch) and removed by
# the garbage collector with the model (so no delete): the pull pod's ServiceAccount, Role, RoleBinding.
APPLY_ONLY = {"get", "create", "patch"}


def test_children_get_the_verbs_of_apply_watch_and_delete():
    # llmmodel_apply creates and merge-patches, the proxy's cache lists and watches, the role deletes.
    # `update` is granted where an older task needed it; children added since (the HPA, the PDB) go
    # without it.
    grants = granted()
    children = rendered_children()
    # Blacklisted children are only applied; the others are applied, watched and deleted (update is
    # granted only where something replaces the object whole).
    needed = {"get", "list", "watch", "create", "patch", "delete"}
    fits = {child: grants[child] == APPLY_ONLY if child in blacklisted() else needed <= grants[child] <= CRUD for child in children}
    assert fits == {child: True for child in children}, {child: sorted(grants[child]) for child in children}
    assert {child for child in children if child not in blacklisted()} >= {("batch", "jobs"), ("apps", "deployments")}


def test_kinds_the_role_only_reads_are_read_only():
    grants = granted()
    # Events are the one kind the role creates without rendering it (llmmodel_status, about the model).
    only_read = named_kinds() - rendered_children() - {(WATCHED_GROUP, "llmmodels"), ("", "events")}
    assert only_read, "the role reads no kind besides its children"
    writes = {kind: sorted(grants[kind] - READ) for kind in only_read if grants[kind] - READ}
    assert writes == {}, "write verbs on kinds the role only reads"
    assert grants[("", "events")] <= {"create", "patch"}
