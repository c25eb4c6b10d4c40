//go:build tools

// Package tools pins Helm 3 for the chart's compatibility test: the chart renders and validates its
// values the same way with Helm 3 as with Helm 4 (tests/install/test_chart_helm3.py).
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
