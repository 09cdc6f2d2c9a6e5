package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/launch"
)

// ckpt run --tls: the coordinator, the nodes' relays, the ranks' peers
// and a staging server all speak mutual TLS with the job's key pair, made
// at launch in the job's directory, readable by the job's user only, and
// gone when the job is. The job's result and its flushes are those of a
// run without TLS; a side that did not speak TLS would have stopped it (a
// TLS listener takes no plain client).
func TestRunOverTLS(t *testing.T) {
	spec, log := stagingSpec(t, 1, "")
	spec.tls, spec.tree = true, true
	spec.ranks, spec.nodes, spec.redundancy = 2, 2, "xor:2" // the job's cost is not the point
	dir := launch.TLSDir(spec.cacheRoot)
	modes := map[string]os.FileMode{}
	spec.onStaging = func(*launch.Staging) {
		for _, p := range []string{jobtls.FilesIn(dir).CA, jobtls.FilesIn(dir).Cert, jobtls.FilesIn(dir).Key} {
			if fi, err := os.Stat(p); err == nil {
				modes[p] = fi.Mode().Perm()
			}
		}
	}
	var coords *launch.Coordinators
	res := runScripted(t, spec, log, func(_ *launch.Config, c *launch.Coordinators) { coords = c })
	if coords.TLS == nil {
		t.Fatal("the coordinators ran without TLS")
	}
	if len(modes) != 3 {
		t.Fatalf("TLS files while the job ran: %v, want 3", modes)
	}
	for p, m := range modes {
		if m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, m)
		}
	}
	if stagedCount(res.Staged, "committed") == 0 {
		t.Errorf("staged %v: want commits over TLS\n%s", res.Staged, log)
	}
	// A flush still under way when the job ends is cut short (its
	// node's cache goes): not a failure of TLS, which would refuse the
	// connection instead.
	for _, e := range res.Staged {
		if e.State == "failed" && (strings.Contains(e.Reason, "tls") || strings.Contains(e.Reason, "certificate") || strings.Contains(e.Reason, "refused")) {
			t.Errorf("%s failed over TLS: %s\n%s", e.Name, e.Reason, log)
		}
	}
	if names := verifyShared(t, spec.shared); len(names) == 0 {
		t.Errorf("nothing on the shared tier\n%s", log)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the job's TLS directory outlived it: %v", err)
	}
}
