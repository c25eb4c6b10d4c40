//go:build tools

// Package tools pins Prometheus and promtool: the rule unit tests (promtool) and the e2e suite's
// real Prometheus, which discovers the real node's pods through the API server.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
