package main

import (
	"os"
	"strings"
	"testing"
)

// TestVerifySharedOnly: a checkpoint only the shared tier holds (the
// caches were removed when the job finished) is the normal state of a
// finished job; verify's notes said "rank 0 on node0: no cache for node
// node0; ...; set [...] lost 4 members", which reads like an error. They
// now say where it is, as information.
func TestVerifySharedOnly(t *testing.T) {
	root, shared := t.TempDir(), t.TempDir()
	writeJob(t, root, shared, "c1")
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	// A cache root that is gone is an error ('ckpt ls' and 'verify' never
	// take a misspelled root for an empty one): the user of a finished
	// job names the shared tier alone.
	if code, _, _ := runCLI(t, "verify", "--cache-root", root, "--shared", shared); code != exitUsage {
		t.Errorf("verify --cache-root (removed): exit %d, want %d", code, exitUsage)
	}
	tiers := []string{"--shared", shared}
	code, stdout, stderr := runCLI(t, append([]string{"verify"}, tiers...)...)
	if code != exitOK || stderr != "" {
		t.Fatalf("verify: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, "in the shared tier only") {
		t.Errorf("verify does not say the checkpoint is in the shared tier only:\n%s", stdout)
	}
	for _, alarm := range []string{"no cache for node", "lost", "rank 0", "not intact"} {
		if strings.Contains(stdout, alarm) {
			t.Errorf("verify's notes read like an error (%q):\n%s", alarm, stdout)
		}
	}
	obj := runJSON(t, append([]string{"verify", "--json"}, tiers...)...)
	v := obj["checkpoints"].([]any)[0].(map[string]any)
	if v["recoverable"] != true || v["how"] != "shared" || v["reason"] != "in no node cache" {
		t.Errorf("verify --json: %v", v)
	}
	if nodes, ok := v["cache_nodes"].([]any); !ok || len(nodes) != 0 {
		t.Errorf("cache_nodes = %v, want []", v["cache_nodes"])
	}
}
