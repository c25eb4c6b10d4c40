# -*- coding: utf-8 -*-
"""Filters over the weights' revisions (module_utils/llmmodel_revisions.py decides; docs/design.md,
"Revisions"): what the volume holds, what a pull keeps, whether a kept volume may be adopted. They run
inside ansible-playbook over objects already read: no API call of their own. Records carry sources
and file names from annotations others can write, so the answers are marked unsafe: never templated
again.
"""

from __future__ import annotations

import os

import ansible.module_utils
from ansible.utils.unsafe_proxy import wrap_var

_ROLE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
if os.path.join(_ROLE, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(_ROLE, "module_utils"))

# pylint: disable=wrong-import-position
from ansible.module_utils.llmmodel_ownership import kept_mismatch  # noqa: E402
from ansible.module_utils.llmmodel_revisions import held, plan, revision_id, sub_path, volume_spec  # noqa: E402


def llmmodel_revisions(pvc, source, keys, **kwargs):
    """{rid, held, desired, served, keep}: see module_utils/llmmodel_revisions.plan."""
    return wrap_var(plan(pvc, str(source), keys, **kwargs))


def llmmodel_held_sources(pvc, keys):
    """The sources of the revisions the volume records."""
    return wrap_var([record["source"] for record in held(pvc, keys)])


def llmmodel_kept_mismatch(pvc, owner, adopt, source, keys):
    """[] or [the KeptWeightsMismatch record] of the weights volume (module_utils/llmmodel_ownership.py)."""
    found = kept_mismatch(pvc, owner, (adopt or {}).get("PersistentVolumeClaim"), str(source), held(pvc, keys))
    return wrap_var([found] if found else [])


def llmmodel_revision_id(source):
    """The directory name of a source's revision under revisions/."""
    return revision_id(str(source))


def llmmodel_sub_path(record):
    """A revision's path in the volume ('' for the root of a volume of the previous release)."""
    return sub_path(record)


def llmmodel_status_revision(record, served_rid=""):
    """A revision as status.weights.revisions lists it: where it is in the volume, whether it is served."""
    shown = {"source": record["source"], "revision": record["revision"], "size": record["size"],
             "pulledAt": record["pulledAt"], "path": sub_path(record) or ".", "served": record["rid"] == served_rid}
    return wrap_var({key: value for key, value in shown.items() if value or key == "served"})


def llmmodel_volume_spec(live, spec):
    """The weights volume's spec to apply: the model's when new, the live one's (grown if asked) after."""
    spec = spec or {}
    return volume_spec(live, spec.get("storageAccessMode") or "ReadWriteOnce", spec.get("storageClass") or "",
                       spec.get("storageSize"))


class FilterModule:
    """llmmodel_revisions, llmmodel_held_sources, llmmodel_kept_mismatch, llmmodel_revision_id, llmmodel_sub_path,
    llmmodel_volume_spec, llmmodel_status_revision."""

    def filters(self):
        return {
            "llmmodel_revisions": llmmodel_revisions,
            "llmmodel_held_sources": llmmodel_held_sources,
            "llmmodel_kept_mismatch": llmmodel_kept_mismatch,
            "llmmodel_revision_id": llmmodel_revision_id,
            "llmmodel_sub_path": llmmodel_sub_path,
            "llmmodel_volume_spec": llmmodel_volume_spec,
            "llmmodel_status_revision": llmmodel_status_revision,
        }
