//go:build tools

// Package tools pins etcd for the local test bed and the build.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
