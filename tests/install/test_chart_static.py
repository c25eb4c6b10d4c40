"""The Helm chart without a cluster: lint, the values schema, and one source of truth with config/.

The chart's CRD, RBAC, manager and monitoring objects are generated from config/ by `make chart`;
these tests fail when the committed chart is not what a fresh generation gives, and render the chart
to compare it object by object with the kustomize build `make deploy` applies.
"""

from __future__ import annotations

import copy
import filecmp
import json
import shutil

import pytest
import yaml
from chart_helpers import (BAD_VALUES, CHART, CI_VALUES, HELM_LABELS, KUSTOMIZE, by_key, default_image, env_of,
                           generator, helm, key, kustomize_objects, manager_container, template)


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=lambda v: v.name if v else "default values")
def test_helm_lint_strict(values):
    result = helm("lint", "--strict", str(CHART), *(["-f", str(values)] if values else []), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_committed_chart_is_what_make_chart_generates(tmp_path):
    copy_of = tmp_path / "llm-operator"
    shutil.copytree(CHART, copy_of)
    generator.generate(copy_of, KUSTOMIZE)
    differences = []

    def collect(cmp, prefix=""):
        differences.extend(f"{prefix}{name}" for name in cmp.left_only + cmp.right_only + cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            collect(sub, f"{prefix}{name}/")

    collect(filecmp.dircmp(copy_of, CHART))
    assert not differences, f"charts/llm-operator is out of date with config/ (run make chart and commit): {differences}"


def normalized(obj: dict) -> dict:
    """obj without what only Helm adds: its labels, and the release's instance in selectors."""
    obj = copy.deepcopy(obj)
    labels = obj["metadata"].get("labels") or {}
    for label in HELM_LABELS | {"app.kubernetes.io/name"}:
        labels.pop(label, None)
    obj["metadata"]["labels"] = labels

    for mapping in generator.mappings(obj.get("spec")):
        mapping.pop("app.kubernetes.io/instance", None)
    if obj["kind"] == "Deployment" and not generator.is_router(obj):
        manager = manager_container([obj])
        manager["args"] = [a for a in manager["args"] if not a.startswith("--zap-log-level=")]
        manager["env"] = [e for e in manager["env"] if e["name"] != "WATCH_NAMESPACE"]
    return obj


@pytest.fixture(scope="module")
def rendered():
    return by_key(template("--set", "monitoring.enabled=true"))


@pytest.fixture(scope="module")
def built():
    return by_key(kustomize_objects(default_image()))


def test_release_llm_operator_installs_the_objects_of_make_deploy(rendered, built):
    """Same kinds, names and namespaces; only the Namespace is Helm's (--create-namespace)."""
    expected = {k for k in built if k[0] != "Namespace"}
    assert set(rendered) == expected


def test_every_object_is_config_s_but_for_helms_labels(rendered, built):
    different = [k for k in built if k[0] not in ("Namespace", "CustomResourceDefinition")
                 and normalized(rendered[k]) != normalized(built[k])]
    assert not different, "\n".join(
        f"{k}:\nchart: {yaml.safe_dump(normalized(rendered[k]))}\nconfig: {yaml.safe_dump(normalized(built[k]))}" for k in different)


def test_the_crd_is_config_s(rendered, built):
    crds = [k for k in built if k[0] == "CustomResourceDefinition"]
    assert crds and all(rendered[k] == built[k] for k in crds)


def test_the_differences_are_the_values_defaults(rendered):
    manager = manager_container(rendered.values())
    assert manager["image"] == default_image()
    assert "--zap-log-level=info" in manager["args"]
    assert "--leader-election-id=llm-operator" in manager["args"]
    assert env_of(manager)["WATCH_NAMESPACE"] == {"name": "WATCH_NAMESPACE", "value": ""}  # every namespace


def test_a_watch_list_turns_the_manager_role_into_roles_in_those_namespaces(built):
    objects = by_key(template("--set", "watchNamespaces={team-a,team-b}"))
    cluster_role = built[("ClusterRole", "llm-operator-manager-role", None)]
    assert ("ClusterRole", "llm-operator-manager-role", None) not in objects
    assert ("ClusterRoleBinding", "llm-operator-manager-rolebinding", None) not in objects
    for namespace in ("team-a", "team-b"):
        role = objects[("Role", "llm-operator-manager-role", namespace)]
        assert role["rules"] == cluster_role["rules"]
        binding = objects[("RoleBinding", "llm-operator-manager-rolebinding", namespace)]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "llm-operator-manager-role"}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "llm-operator-controller-manager", "namespace": "llm-operator-system"}]
    assert env_of(manager_container(objects.values()))["WATCH_NAMESPACE"]["value"] == "team-a,team-b"
    # Leader election and the metrics' token reviews stay where they are.
    assert ("Role", "llm-operator-leader-election-role", "llm-operator-system") in objects
    assert ("ClusterRole", "llm-operator-metrics-auth-role", None) in objects


def test_another_release_name_renames_everything_and_selects_only_its_pods():
    objects = template(release="shard-b", namespace="ops")
    names = {o["metadata"]["name"] for o in objects if o["kind"] != "CustomResourceDefinition"}
    assert all(name.startswith("shard-b-llm-operator-") for name in names), names
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == "shard-b"
    service = next(o for o in objects if o["kind"] == "Service")
    assert service["spec"]["selector"]["app.kubernetes.io/instance"] == "shard-b"
    assert "--leader-election-id=shard-b-llm-operator" in manager_container(objects)["args"]
    for obj in objects:
        account = "shard-b-llm-operator-router" if generator.is_router(obj) else "shard-b-llm-operator-controller-manager"
        for subject in obj.get("subjects", []):
            assert subject == {"kind": "ServiceAccount", "name": account, "namespace": "ops"}
    router = next(o for o in objects if o["kind"] == "Service" and generator.is_router(o))
    assert router["spec"]["selector"]["app.kubernetes.io/instance"] == "shard-b"


def test_values_reach_the_manager():
    air_gapped = next(v for v in CI_VALUES if v.name == "air-gapped-values.yaml")
    values = yaml.safe_load(air_gapped.read_text())
    objects = template("-f", str(air_gapped), "--set", "logLevel=debug,maxConcurrentReconciles=3,ansibleVerbosity=2")
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    manager = manager_container(objects)
    env = {name: item.get("value") for name, item in env_of(manager).items()}
    assert manager["image"] == "registry.internal.example/llm/llm-operator:0.1.0"
    assert manager["imagePullPolicy"] == "Always"
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "internal-registry"}]
    assert env["LLMMODEL_PULLER_IMAGE"] == values["pullerImage"]
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    assert json.loads(env["LLMMODEL_PULLER_RESOURCES"]) == values.get("pullerResources", defaults["pullerResources"])
    for preset, image in values["runtimeImages"].items():
        assert env[f"LLMMODEL_IMAGE_{preset.upper()}"] == image
    assert env["LLMMODEL_HF_ENDPOINT"] == values["hfEndpoint"]
    assert env["MAX_CONCURRENT_RECONCILES_LLMMODEL_INFERENCE_AI_EXAMPLE_COM"] == "3"
    assert env["ANSIBLE_VERBOSITY_LLMMODEL_INFERENCE_AI_EXAMPLE_COM"] == "2"
    assert "--zap-log-level=debug" in manager["args"]


def test_placement_and_pod_settings_reach_the_pod():
    placement = next(v for v in CI_VALUES if v.name == "placement-values.yaml")
    values = yaml.safe_load(placement.read_text())
    deployment = next(o for o in template("-f", str(placement), "--set", "replicaCount=3") if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 3
    for field in ("nodeSelector", "tolerations", "affinity", "priorityClassName"):
        assert pod["spec"][field] == values[field]
    assert pod["spec"]["securityContext"] == values["podSecurityContext"]
    assert manager_container([deployment])["securityContext"] == values["securityContext"]
    assert values["podAnnotations"].items() <= pod["metadata"]["annotations"].items()
    assert values["podLabels"].items() <= pod["metadata"]["labels"].items()
    env = env_of(manager_container([deployment]))
    assert all(env[item["name"]] == item for item in values["extraEnv"])


def test_the_router_is_on_by_default_and_its_values_reach_it():
    objects = by_key(template("--set", "router.replicas=1,router.namespaces={team-a,team-b},router.image=r.example/r:1",
                              "--set", "router.nodeSelector.kubernetes\\.io/hostname=node-1"))
    deployment = objects[("Deployment", "llm-operator-router", "llm-operator-system")]
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    router = pod["containers"][0]
    assert router["image"] == "r.example/r:1"
    assert env_of(router)["LLM_ROUTER_NAMESPACES"]["value"] == "team-a,team-b"
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "node-1"}
    assert router["securityContext"]["readOnlyRootFilesystem"] is True
    assert ("PodDisruptionBudget", "llm-operator-router", "llm-operator-system") not in objects, "one replica: no PDB"
    assert ("Service", "llm-operator-router", "llm-operator-system") in by_key(template())
    assert ("PodDisruptionBudget", "llm-operator-router", "llm-operator-system") in by_key(template())


def test_api_keys_mount_the_named_secret_and_nothing_else_reads_secrets():
    router_pod = ("Deployment", "llm-operator-router", "llm-operator-system")
    off = by_key(template())[router_pod]["spec"]["template"]["spec"]
    assert "volumes" not in off and "LLM_ROUTER_API_KEYS_FILE" not in env_of(off["containers"][0])
    on = by_key(template("--set", "router.apiKeys.secretName=router-keys,router.apiKeys.key=keys"))
    pod = on[router_pod]["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "api-keys", "secret": {"secretName": "router-keys",
                                                              "items": [{"key": "keys", "path": "keys.json"}]}}]
    container = pod["containers"][0]
    assert container["volumeMounts"] == [{"name": "api-keys", "mountPath": "/etc/llm-router/api-keys", "readOnly": True}]
    assert env_of(container)["LLM_ROUTER_API_KEYS_FILE"]["value"] == "/etc/llm-router/api-keys/keys.json"
    role = on[("ClusterRole", "llm-operator-router-role", None)]
    assert all("secrets" not in rule["resources"] for rule in role["rules"]), "the kubelet mounts it: no RBAC"


def test_router_enabled_false_leaves_every_router_object_out():
    objects = template("--set", "router.enabled=false")
    assert not [o for o in objects if generator.is_router(o) or "router" in o["metadata"]["name"]]


def test_the_router_reads_models_and_endpointslices_and_nothing_else(built):
    role = built[("ClusterRole", "llm-operator-router-role", None)]
    assert role["rules"] == [
        {"apiGroups": ["inference.ai.example.com"], "resources": ["llmmodels"], "verbs": ["list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
    ]


def test_the_router_scales_servers_and_keeps_its_leases_in_its_own_namespace_only(built):
    # Scale to zero and back (docs/design.md): the scale subresource, compare-and-set (get, update),
    # and the models' activity Leases in the router's namespace; no Deployment itself, no other Lease.
    scaling = built[("ClusterRole", "llm-operator-router-scaling-role", None)]
    assert scaling["rules"] == [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "update"]}]
    activity = built[("Role", "llm-operator-router-activity-role", "llm-operator-system")]
    assert activity["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]}]
    bindings = [o for key, o in built.items() if key[0] in ("ClusterRoleBinding", "RoleBinding")
                and o["roleRef"]["name"] in ("llm-operator-router-scaling-role", "llm-operator-router-activity-role")]
    assert sorted((o["kind"], o["metadata"].get("namespace")) for o in bindings) == [
        ("ClusterRoleBinding", None), ("RoleBinding", "llm-operator-system")]
    assert all(o["subjects"] == [{"kind": "ServiceAccount", "name": "llm-operator-router", "namespace": "llm-operator-system"}]
               for o in bindings)


def test_monitoring_is_off_by_default():
    assert not [o for o in template() if o["apiVersion"].startswith("monitoring.coreos.com/")]


@pytest.mark.parametrize("setting,path", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_wrong_values_fail_with_a_message_naming_them(setting, path):
    result = template("--set", setting, check=False)
    assert result.returncode != 0, f"{setting} was accepted"
    assert path in result.stderr, result.stderr


def test_a_missing_image_fails():
    result = template("--set", "image=null", check=False)
    assert result.returncode != 0 and "image" in result.stderr, result.stderr


def test_a_release_name_too_long_for_the_names_fails_saying_so():
    result = template(release="a-release-name-that-is-far-too-long", check=False)
    assert result.returncode != 0
    assert "longer than 28" in result.stderr and "fullnameOverride" in result.stderr, result.stderr
