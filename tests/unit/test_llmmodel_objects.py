"""llmmodel_objects without a cluster: when a patch counts as applied, and argument checks."""

from __future__ import annotations

import pytest

from unit_helpers import load_library_module

llmmodel_objects = load_library_module("llmmodel_objects")
applied = llmmodel_objects.applied


@pytest.mark.parametrize(
    ("live", "patch", "expected"),
    [
        ({"spec": {"replicas": 0, "paused": False}}, {"spec": {"replicas": 0}}, True),
        ({"spec": {"replicas": 2}}, {"spec": {"replicas": 0}}, False),
        ({"spec": {}}, {"spec": {"replicas": 0}}, False),
        ({"metadata": {"name": "a"}}, {"metadata": {"ownerReferences": []}}, True),
        ({"metadata": {"ownerReferences": []}}, {"metadata": {"ownerReferences": []}}, True),
        ({"metadata": {"ownerReferences": [{"uid": "1"}]}}, {"metadata": {"ownerReferences": []}}, False),
        ({"metadata": {"ownerReferences": [{"uid": "1"}, {"uid": "2"}]}}, {"metadata": {"ownerReferences": [{"uid": "2"}]}}, False),
        ({"metadata": {"ownerReferences": [{"uid": "2", "kind": "X"}]}}, {"metadata": {"ownerReferences": [{"uid": "2"}]}}, True),
        ({"metadata": {"labels": {"a": "b"}}}, {"metadata": {"labels": {"a": None}}}, False),
        ({"metadata": {"labels": {}}}, {"metadata": {"labels": {"a": None}}}, True),
    ],
)
def test_applied(live, patch, expected):
    assert applied(live, patch) is expected


def test_patched_needs_a_patch(run_module):
    result = run_module(llmmodel_objects, {"objects": [{"api_version": "v1", "kind": "ConfigMap", "name": "a", "state": "patched"}]})
    assert result["failed"] is True and "patch" in result["msg"]


def test_wait_gone_needs_a_selector_or_a_name(run_module):
    result = run_module(llmmodel_objects, {"wait_gone": {"api_version": "v1", "kind": "Pod"}})
    assert result["failed"] is True and "label_selector" in result["msg"]
