//go:build tools

// Package tools pins kustomize for the local test bed.
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
