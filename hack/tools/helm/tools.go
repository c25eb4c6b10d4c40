//go:build tools

// Package tools pins Helm for the chart's tests (charts/llm-operator).
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
