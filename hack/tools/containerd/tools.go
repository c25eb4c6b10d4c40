//go:build tools

// Package tools pins containerd, ctr and the runc shim of the real node.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
