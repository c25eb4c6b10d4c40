"""What the API server returns for a resource quantity the role renders: (rendered, returned).

The returned strings are the API server's canonical forms (k8s.io/apimachinery resource.Quantity,
plus the core/v1 defaulting that rounds every ResourceList value up to a milli), or the text as
written where the parser finds its digits canonical already ("1.", "+1", "1E6", "100.035k").
test_llmmodel_quantity_cluster.py sends every rendered value to the real API server and checks the
table against what comes back, so the table cannot drift from Kubernetes.
"""

from __future__ import annotations

# In a ResourceList: container resources.limits / requests, a PVC's spec.resources.requests.
RESOURCE_LIST = [
    (1, "1"),
    ("1", "1"),
    (2, "2"),
    ("1000m", "1"),
    ("1500m", "1500m"),
    (1.5, "1500m"),
    ("1.5", "1500m"),
    (0.5, "500m"),
    ("0.5", "500m"),
    (0.1, "100m"),
    ("0.30000000000000004", "301m"),  # rounded up to a milli
    ("0.0001", "1m"),
    ("250m", "250m"),
    ("2000", "2k"),
    (2000, "2k"),
    # Kept as written: the API server reuses a string whose digits it finds canonical.
    ("100.035k", "100.035k"),
    ("1e3", "1e3"),
    ("1E6", "1E6"),
    ("1.5e3", "1500"),
    (1e6, "1M"),
    ("1.", "1."),
    ("1.G", "1.G"),
    ("+1", "+1"),
    ("0.5Gi", "512Mi"),
    ("1.5Gi", "1536Mi"),
    ("1024Mi", "1Gi"),
    ("0.9Gi", "966367641600m"),
    ("16Gi", "16Gi"),
    ("50Gi", "50Gi"),
    ("64G", "64G"),
    ("1000Mi", "1000Mi"),
]

# Elsewhere (a HorizontalPodAutoscaler's MetricTarget): parsed, rounded to a nano only.
PLAIN = [
    ("100", "100"),
    ("0.5", "500m"),
    ("0.0001", "100u"),
    ("1.5k", "1500"),
    ("2Gi", "2Gi"),
]
