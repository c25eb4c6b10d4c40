//go:build tools

// Package tools pins fake-gcs-server, the Cloud Storage JSON API server the puller's gs:// tests run
// on 127.0.0.1 (BSD-2-Clause). It checks no token: the tests' own token endpoint does (puller/tests).
package tools

import (
	_ "github.com/fsouza/fake-gcs-server"
)
