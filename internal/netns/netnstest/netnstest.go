// Package netnstest gives tests hosts of their own (package netns), or
// skips them loudly ("SKIPPED: ...") where this machine cannot make
// network namespaces; with CKPT_REQUIRE_NETNS=1 or CI=true it fails them
// instead, so that CI cannot lose them silently.
package netnstest

import (
	"os"
	"testing"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/netns"
)

// EnvRequire names the variable that, set to 1, makes a machine without
// namespaces fail the tests rather than skip them.
const EnvRequire = jobenv.VarRequireNetns

// Required reports whether the tests must run: $CKPT_REQUIRE_NETNS is 1
// or $CI is true.
func Required() bool { return os.Getenv(EnvRequire) == "1" || os.Getenv("CI") == "true" }

// Available skips t loudly, or fails it when Required, unless this
// machine can make hosts.
func Available(t testing.TB) {
	t.Helper()
	why := netns.Unavailable()
	if why == "" {
		return
	}
	if Required() {
		t.Fatalf("network namespaces: %s (%s=1 or CI=true: these tests must run)", why, EnvRequire)
	}
	t.Skip("SKIPPED: network namespaces: " + why + "; nodes share loopback instead")
}

// New makes the hosts for t (Available first) and removes them at its
// end.
func New(t testing.TB, names ...string) *netns.Net {
	t.Helper()
	Available(t)
	n, err := netns.New(names...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("removing the hosts: %v", err)
		}
	})
	return n
}
