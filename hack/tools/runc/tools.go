//go:build tools

// Package tools pins runc (with seccomp) for the real node's containerd.
package tools

import (
	_ "github.com/opencontainers/runc"
)
