//go:build tools

// Package tools pins ansible-operator for the local test bed and the build.
package tools

import (
	_ "github.com/operator-framework/ansible-operator-plugins/cmd/ansible-operator"
)
