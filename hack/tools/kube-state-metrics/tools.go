//go:build tools

// Package tools pins kube-state-metrics: its custom-resource-state metrics turn LLMModel status
// into the model metrics (config/prometheus/kube-state-metrics/); the e2e suite runs it.
package tools

import (
	_ "k8s.io/kube-state-metrics/v2"
)
