"""The e2e suite's Prometheus configuration: what the Prometheus Operator would generate from the
operator's PodMonitors and its ServiceMonitor, for a Prometheus that runs on this machine and finds
pods through the API server (kubernetes service discovery with the local kubeconfig).

The translation covers what the project's objects use (matchLabels selectors, a named port, a path,
HTTPS with a bearer token, replace relabelings) and labels targets as the Prometheus Operator does
(job, namespace, pod, container, endpoint), so the shipped alerts and dashboard see the same series
as in a real cluster. Anything else in a monitor fails the translation instead of being ignored.

TRAFFIC RULE: kwok's fake pods have made-up addresses (10.0.0.0/24) that exist nowhere, and nothing
may leave this machine. Every job below therefore (1) discovers only the namespaces it is given, and
(2) keeps, before anything else, only targets on the real node whose address is in the real node's
pod range: a kwok pod is dropped at relabeling, so Prometheus never even connects to it.
"""

from __future__ import annotations

import ipaddress
import re

import node  # hack/node.py: the real node's name and pod range

REAL_POD_ADDRESS = r"10\.244\.0\.[0-9]{1,3}:[0-9]+"
assert ipaddress.ip_network(node.POD_CIDR) == ipaddress.ip_network("10.244.0.0/24"), "REAL_POD_ADDRESS follows node.POD_CIDR"


def label_name(key: str) -> str:
    """A Kubernetes label key as a Prometheus meta label suffix (every non-alphanumeric becomes _)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", key)


def real_node_only(kind: str) -> list[dict]:
    """The traffic guard: only the real node's targets, only its pod addresses (see the module doc)."""
    node_label = {"pod": "__meta_kubernetes_pod_node_name", "endpointslice": "__meta_kubernetes_endpointslice_endpoint_node_name"}[kind]
    return [
        {"source_labels": [node_label], "regex": node.NODE_NAME, "action": "keep"},
        {"source_labels": ["__address__"], "regex": REAL_POD_ADDRESS, "action": "keep"},
    ]


def selector_keep(prefix: str, match_labels: dict) -> list[dict]:
    """Keep the targets whose object has every label of a matchLabels selector."""
    return [{"source_labels": [f"{prefix}_label_{label_name(key)}", f"{prefix}_labelpresent_{label_name(key)}"],
             "regex": f"({re.escape(value)});true", "action": "keep"} for key, value in sorted(match_labels.items())]


def translated_relabelings(relabelings: list[dict]) -> list[dict]:
    rules = []
    for relabel in relabelings or []:
        assert set(relabel) <= {"action", "sourceLabels", "targetLabel", "regex", "replacement", "separator"}, relabel
        rule = {"action": relabel.get("action", "replace").lower()}
        for ours, theirs in (("source_labels", "sourceLabels"), ("target_label", "targetLabel"), ("regex", "regex"),
                             ("replacement", "replacement"), ("separator", "separator")):
            if theirs in relabel:
                rule[ours] = relabel[theirs]
        rules.append(rule)
    return rules


def pod_monitor_jobs(monitor: dict, kubeconfig: str) -> list[dict]:
    """One scrape job per podMetricsEndpoint of a PodMonitor (monitoring.coreos.com/v1)."""
    spec, meta = monitor["spec"], monitor["metadata"]
    assert set(spec["selector"]) == {"matchLabels"}, "only matchLabels selectors are translated"
    assert not spec.get("namespaceSelector"), "only the PodMonitor's own namespace is translated"
    jobs = []
    for index, endpoint in enumerate(spec["podMetricsEndpoints"]):
        assert set(endpoint) <= {"port", "path", "relabelings"}, endpoint
        jobs.append({
            "job_name": f"podMonitor/{meta['namespace']}/{meta['name']}/{index}",
            "metrics_path": endpoint.get("path", "/metrics"),
            "kubernetes_sd_configs": [{"role": "pod", "kubeconfig_file": kubeconfig, "namespaces": {"names": [meta["namespace"]]}}],
            "relabel_configs": [
                *real_node_only("pod"),
                *selector_keep("__meta_kubernetes_pod", spec["selector"]["matchLabels"]),
                {"source_labels": ["__meta_kubernetes_pod_container_port_name"], "regex": endpoint["port"], "action": "keep"},
                {"source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)", "action": "drop"},
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"},
                {"target_label": "endpoint", "replacement": endpoint["port"]},
                *translated_relabelings(endpoint.get("relabelings")),
            ],
        })
    return jobs


def service_monitor_jobs(monitor: dict, kubeconfig: str, token_file: str) -> list[dict]:
    """One scrape job per endpoint of a ServiceMonitor: HTTPS with the given ServiceAccount token."""
    spec, meta = monitor["spec"], monitor["metadata"]
    assert set(spec["selector"]) == {"matchLabels"}, "only matchLabels selectors are translated"
    jobs = []
    for index, endpoint in enumerate(spec["endpoints"]):
        assert set(endpoint) <= {"port", "path", "scheme", "bearerTokenFile", "tlsConfig"}, endpoint
        jobs.append({
            "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{index}",
            "metrics_path": endpoint.get("path", "/metrics"),
            "scheme": endpoint.get("scheme", "http"),
            # The monitor names the token file of Prometheus' pod; here the test's ServiceAccount's.
            "authorization": {"credentials_file": token_file},
            "tls_config": {"insecure_skip_verify": bool(endpoint.get("tlsConfig", {}).get("insecureSkipVerify"))},
            "kubernetes_sd_configs": [{"role": "endpointslice", "kubeconfig_file": kubeconfig,
                                       "namespaces": {"names": [meta["namespace"]]}}],
            "relabel_configs": [
                *real_node_only("endpointslice"),
                *selector_keep("__meta_kubernetes_service", spec["selector"]["matchLabels"]),
                {"source_labels": ["__meta_kubernetes_endpointslice_port_name"], "regex": endpoint["port"], "action": "keep"},
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
                # The Prometheus Operator's default job label: the Service's name.
                {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job"},
                {"target_label": "endpoint", "replacement": endpoint["port"]},
            ],
        })
    return jobs
