//go:build tools

// Package tools pins operator-sdk for the local test bed and the build.
package tools

import (
	_ "github.com/operator-framework/operator-sdk/cmd/operator-sdk"
)
