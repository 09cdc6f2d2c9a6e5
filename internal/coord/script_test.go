package coord

import (
	"testing"

	"github.com/ckpt/ckpt/internal/scripttest"
)

// The scripts in testdata/ run on package scripttest's runner (go test
// -rewrite rewrites their expected output).
type (
	command = scripttest.Command
	arg     = scripttest.Arg
)

func runScripts(t *testing.T, newHandler func(t *testing.T) func(*command) string) {
	scripttest.Run(t, newHandler)
}
