//go:build tools

// Package tools pins versitygw, the S3 gateway the puller's tests and `make bench-pull` run on
// 127.0.0.1 (it checks AWS Signature V4; Apache-2.0).
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
