//go:build tools

// Package tools pins crictl, the CRI client used to inspect the real node.
package tools

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
