// Package jobtlstest makes a job's TLS material for the tests of the
// packages that speak it (coordnet, peer, stage): one job per call, so a
// test that calls it twice has a member's configuration and a stranger's.
package jobtlstest

import (
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobtls"
)

// New makes a job's CA, certificate and key in a directory of tb's, valid
// for an hour (longer than any test), and returns its configurations.
func New(tb testing.TB) *jobtls.Config {
	tb.Helper()
	c, _, err := jobtls.New(tb.TempDir(), time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
