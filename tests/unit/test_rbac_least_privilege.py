"""The manager's ClusterRole grants what the llmmodel role and ansible-operator use, and nothing else.

The needs are derived from the role itself (tests/rbac_needs.py): the objects its templates render,
the kinds it reads by name or lists by label, deletes or patches, the Events it writes, and what
ansible-operator does with the watched kind. A new template (an HPA, a PDB) fails here until
config/rbac/role.yaml grants it, and a verb that nothing uses any more fails too.
tests/install/test_deploy.py asks the API server what the deployed account may do.
"""

from __future__ import annotations

import sys

from unit_helpers import REPO

sys.path.insert(0, str(REPO / "tests"))

import rbac_needs  # noqa: E402  pylint: disable=wrong-import-position


def test_the_role_is_read_correctly():
    # The derivation must see what the role is known to do, or the comparisons below prove nothing.
    assert {("", "persistentvolumeclaims"), ("batch", "jobs"), ("apps", "deployments"), ("", "services")} <= rbac_needs.rendered_children()
    assert {("", "pods"), ("", "events"), (rbac_needs.WATCHED_GROUP, "llmmodels")} <= rbac_needs.named_kinds()
    assert {("batch", "jobs"), ("apps", "deployments"), ("", "persistentvolumeclaims")} <= rbac_needs.deleted_kinds()
    assert rbac_needs.reads()[("", "pods")] == {"list"}
    assert ("", "events") in rbac_needs.created_unrendered()


def test_the_cluster_role_grants_exactly_what_is_used():
    needed, granted = rbac_needs.needed(), rbac_needs.granted()
    missing = {kind: sorted(verbs - granted.get(kind, set())) for kind, verbs in needed.items() if verbs - granted.get(kind, set())}
    unused = {kind: sorted(verbs - needed.get(kind, set())) for kind, verbs in granted.items() if verbs - needed.get(kind, set())}
    assert missing == {}, "used by roles/llmmodel or ansible-operator but not granted in config/rbac/role.yaml"
    assert unused == {}, "granted in config/rbac/role.yaml but used by nothing"


def test_no_secrets_and_no_role_escalation():
    granted = rbac_needs.granted()
    # The credentials Secret is checked from the pull pod (its kubelet says when it is missing).
    assert ("", "secrets") not in granted
    # Roles for the pullers are created with the permissions the operator holds itself, never more.
    for kind in (("rbac.authorization.k8s.io", "roles"), ("rbac.authorization.k8s.io", "clusterroles")):
        assert not granted.get(kind, set()) & {"bind", "escalate"}


def test_kinds_the_role_only_reads_are_read_only():
    granted = rbac_needs.granted()
    only_read = rbac_needs.named_kinds() - rbac_needs.rendered_children() - set(rbac_needs.WATCHED) - rbac_needs.created_unrendered()
    assert only_read, "the role reads no kind besides its children"
    # Besides reads, only what llmmodel_selector_migration does: label the previous release's server
    # pods, hand over and remove its ReplicaSets.
    moved = rbac_needs.migration_needs()
    assert moved[("apps", "replicasets")] == {"list", "patch", "delete"} and moved[("", "pods")] == {"list", "patch"}
    read_verbs = {"get", "list", "watch"}
    writes = {kind: sorted(granted[kind] - read_verbs - moved.get(kind, set())) for kind in only_read
              if granted[kind] - read_verbs - moved.get(kind, set())}
    assert writes == {}, "write verbs on kinds the role only reads"
