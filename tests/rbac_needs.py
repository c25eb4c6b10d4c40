"""What the manager's ClusterRole must grant, derived from roles/llmmodel and watches.yaml.

Used by tests/unit/test_rbac_least_privilege.py (config/rbac/role.yaml grants exactly this) and by
tests/install (the deployed account may do this and nothing else). Nothing here is a table to keep in
step with the role by hand: each verb comes from what the role renders, reads, lists and deletes, or
from what ansible-operator itself does with the watched kind (WATCHED, below, with the reason).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
ROLE = REPO / "roles" / "llmmodel"
CLUSTER_ROLE = REPO / "config" / "rbac" / "role.yaml"
WATCHED_GROUP = "inference.ai.example.com"

# ansible-operator's own use of the watched kind: an informer (get, list, watch), the finalizer added
# and removed with Update, the status written by the role (patch) and by ansible-operator's markError
# (Update of the status subresource), and the owner references with blockOwnerDeletion that its proxy
# injects into children (Update of the finalizers subresource).
WATCHED = {
    (WATCHED_GROUP, "llmmodels"): {"get", "list", "watch", "update"},
    (WATCHED_GROUP, "llmmodels/status"): {"patch", "update"},
    (WATCHED_GROUP, "llmmodels/finalizers"): {"update"},
}

# A literal apiVersion followed by a literal kind, as the role writes them: YAML keys
# (`api_version: v1` / `kind: Pod` on the next line), flow mappings ({api_version: v1, kind: Pod}),
# Jinja keyword arguments (api_version='v1', kind='Pod') and Python (api_version="v1", kind="Event").
API_KIND = re.compile(
    r"""['"]?api_?[vV]ersion['"]?\s*[:=]\s*['"]?(?P<api>[a-z0-9.]*/?v[0-9a-z]+)['"]?\s*,?\s*"""
    r"""['"]?kind['"]?\s*[:=]\s*['"]?(?P<kind>[A-Z]\w+)"""
)
# A read lookup: query('llmmodel_read', api_version=..., kind=..., ..., resource_name= or label_selector=).
READ = re.compile(
    r"""query\(\s*'llmmodel_read'\s*,\s*api_version='(?P<api>[^']+)'\s*,\s*kind='(?P<kind>\w+)'(?P<rest>[^)]*)\)""", re.S
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
    return api_version.rpartition("/")[0], plural(kind)


def role_files():
    return [*(ROLE / "tasks").glob("*.yml"), ROLE / "vars" / "main.yml", *(ROLE / "library").glob("*.py"),
            *(ROLE / "module_utils").glob("*.py")]


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
    """(group, resource) of every kind the role's tasks, vars, modules and module_utils name literally."""
    return {group_resource(m.group("api"), m.group("kind")) for path in role_files() for m in API_KIND.finditer(path.read_text())}


def blacklisted() -> set[tuple[str, str]]:
    """(group, resource) of the kinds watches.yaml keeps out of ansible-operator's cache."""
    watch = yaml.safe_load((REPO / "watches.yaml").read_text())[0]
    return {group_resource(f"{e['group']}/{e['version']}" if e["group"] else e["version"], e["kind"]) for e in watch.get("blacklist", [])}


def _object_entries():
    """Every entry the role hands llmmodel_objects (tasks) or keeps for it (vars/main.yml)."""
    entries = []
    for path in (ROLE / "tasks").glob("*.yml"):
        for task in _tasks(yaml.safe_load(path.read_text()) or []):
            args = task.get("llmmodel_objects")
            if not isinstance(args, dict):
                continue
            if isinstance(args.get("objects"), list):
                entries.extend(args["objects"])
            # Entries a task composes in its vars (the weights volume of the finalizer).
            entries.extend(v for v in (task.get("vars") or {}).values() if isinstance(v, dict) and "kind" in v and "api_version" in v)
    variables = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    entries.extend(variables["__llmmodel_finalized_children"])
    # llmmodel_apply's `absent`: the scaling objects no longer wanted, the puller's identity after its pull.
    entries.extend({"api_version": v["apiVersion"], "kind": v["kind"]} for v in variables["__llmmodel_scaling_kinds"].values())
    entries.extend({"api_version": v["apiVersion"], "kind": v["kind"]} for v in variables["__llmmodel_puller_access_objects"])
    return entries


def _tasks(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key) or [])


def deleted_kinds() -> set[tuple[str, str]]:
    """Kinds the role may delete: every llmmodel_objects entry whose state is not literally `patched`."""
    return {group_resource(e["api_version"], e["kind"]) for e in _object_entries() if e.get("state") != "patched"}


def patched_kinds() -> set[tuple[str, str]]:
    """Kinds llmmodel_objects may merge-patch (a state that is, or may template to, `patched`)."""
    return {group_resource(e["api_version"], e["kind"]) for e in _object_entries() if e.get("state", "absent") != "absent"}


def reads() -> dict[tuple[str, str], set[str]]:
    """The verbs of the role's read lookups and waits: get by name, list by label selector."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in (ROLE / "tasks").glob("*.yml"):
        text = path.read_text()
        for match in READ.finditer(text):
            verb = "get" if "resource_name=" in match.group("rest") else "list"
            found.setdefault(group_resource(match.group("api"), match.group("kind")), set()).add(verb)
        for task in _tasks(yaml.safe_load(text) or []):
            wait = (task.get("llmmodel_objects") or {}).get("wait_gone") if isinstance(task.get("llmmodel_objects"), dict) else None
            if wait:
                verb = "list" if wait.get("label_selector") else "get"
                found.setdefault(group_resource(wait["api_version"], wait["kind"]), set()).add(verb)
    return found


# llmmodel_selector_migration's resources (`self.<attr> = kube.resources.get(api_version=..., kind=...)`)
# and what it does with them: self.patch / self.delete / self.list, self.kube.get by name.
MIGRATION = ROLE / "library" / "llmmodel_selector_migration.py"
RESOURCE_ATTR = re.compile(r'self\.(?P<attr>\w+) = kube\.resources\.get\(api_version="(?P<api>[^"]+)", kind="(?P<kind>\w+)"\)')
MIGRATION_CALL = re.compile(r'self\.(?:(?P<verb>patch|delete|list)|kube\.get)\(self\.(?P<attr>\w+)(?P<named>, name=)?')


def migration_needs() -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> the verbs llmmodel_selector_migration uses."""
    text = MIGRATION.read_text()
    kinds = {m["attr"]: group_resource(m["api"], m["kind"]) for m in RESOURCE_ATTR.finditer(text)}
    found: dict[tuple[str, str], set[str]] = {}
    for m in MIGRATION_CALL.finditer(text):
        found.setdefault(kinds[m["attr"]], set()).add(m["verb"] or ("get" if m["named"] else "list"))
    return found


def created_unrendered() -> set[tuple[str, str]]:
    """Kinds a module creates without a template: the Events llmmodel_status writes about a model."""
    status = (ROLE / "library" / "llmmodel_status.py").read_text()
    return {group_resource("v1", "Event")} if re.search(r'kind="Event"', status) and "kube.create(events" in status else set()


def needed() -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> the verbs the manager needs, and no more."""
    grants = {key: set(verbs) for key, verbs in WATCHED.items()}
    cached_out = blacklisted()
    for child in rendered_children():
        # llmmodel_apply reads, creates and merge-patches; the proxy's informer lists and watches
        # what is not blacklisted; the finalizer and the scaling clean-up delete.
        verbs = {"get", "create", "patch"}
        if child not in cached_out:
            verbs |= {"list", "watch"}
        if child in deleted_kinds():
            verbs.add("delete")
        grants[child] = verbs
    for kind, verbs in reads().items():
        grants.setdefault(kind, set()).update(verbs)
    for kind in patched_kinds():
        grants.setdefault(kind, set()).update({"get", "patch"})
    for kind, verbs in migration_needs().items():
        grants.setdefault(kind, set()).update(verbs)
    for kind in created_unrendered():
        grants.setdefault(kind, set()).add("create")
    return grants


def granted() -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs of config/rbac/role.yaml."""
    role = yaml.safe_load(CLUSTER_ROLE.read_text())
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants
