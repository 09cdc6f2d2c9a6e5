package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// flipFileByte flips a byte in the middle of a file, as a bad disk would.
func flipFileByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineOf is the line of a table that starts with name.
func lineOf(t *testing.T, table, name string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	t.Fatalf("no line of %s in\n%s", name, table)
	return ""
}

// A byte flipped in one node's cache manifest, or in a shared manifest,
// is reported by ls and verify as damage of that checkpoint, with where
// and why, in the table and in --json; a checkpoint whose only manifest is
// corrupt is listed (not omitted) and not recoverable.
func TestVerifyLsCorruptManifests(t *testing.T) {
	root, shared := t.TempDir(), t.TempDir()
	writeJob(t, root, shared, "c1", "c2", "c3")
	tiers := []string{"--cache-root", root, "--shared", shared}
	flipFileByte(t, filepath.Join(root, "node1", "c2", "manifest"))
	flipFileByte(t, filepath.Join(shared, "c3.manifest"))
	// c1 is on the shared tier alone (the caches keep two), its manifest
	// there corrupt.
	if _, err := os.Stat(filepath.Join(root, "node0", "c1")); !os.IsNotExist(err) {
		t.Fatalf("c1 still in node0's cache (%v): the test wants it on the shared tier alone", err)
	}
	flipFileByte(t, filepath.Join(shared, "c1.manifest"))

	code, stdout, stderr := runCLI(t, append([]string{"ls"}, tiers...)...)
	if code != exitOK || stderr != "" {
		t.Fatalf("ls: exit %d, stderr %q", code, stderr)
	}
	checksum := "corrupt: manifest checksum"
	for name, want := range map[string]string{
		"c2": "cache (3 nodes), shared, damaged: the manifest in node1's cache: " + checksum,
		"c3": "cache (4 nodes), damaged: the shared tier's manifest: " + checksum,
		"c1": "damaged: the shared tier's manifest: " + checksum,
	} {
		if l := lineOf(t, stdout, name); !strings.Contains(l, want) {
			t.Errorf("ls line of %s = %q, want it to say %q", name, l, want)
		}
	}
	if l := lineOf(t, stdout, "c1"); !strings.HasPrefix(strings.Join(strings.Fields(l), " "), "c1 ? ? ? ?") {
		t.Errorf("ls line of c1 = %q, want ? for what its manifest would say", l)
	}
	ls := runJSON(t, append([]string{"ls", "--json"}, tiers...)...)
	byName := map[string]map[string]any{}
	for _, it := range ls["checkpoints"].([]any) {
		m := it.(map[string]any)
		byName[m["name"].(string)] = m
	}
	checkDamage := func(what string, item map[string]any, tier string, node any, object string) {
		t.Helper()
		ds, _ := item["damaged"].([]any)
		if len(ds) != 1 {
			t.Fatalf("%s: damaged = %v, want one", what, item["damaged"])
		}
		d := ds[0].(map[string]any)
		if d["tier"] != tier || d["node"] != node || d["object"] != object || !strings.Contains(d["problem"].(string), checksum) {
			t.Errorf("%s: damaged = %v, want %s %v %s", what, d, tier, node, object)
		}
	}
	checkDamage("ls c2", byName["c2"], "cache", "node1", "c2/manifest")
	checkDamage("ls c1", byName["c1"], "shared", nil, "c1.manifest")
	checkDamage("ls c3", byName["c3"], "shared", nil, "c3.manifest")
	if byName["c3"]["shared"] != false || len(byName["c2"]["cache_nodes"].([]any)) != 3 || fmt.Sprint(byName["c1"]["id"]) != "0" {
		t.Errorf("ls --json: %v", byName)
	}

	// verify: c2 from the caches as they are (node1's files are intact
	// against the other nodes' manifest), said damaged; c1 not recoverable.
	code, stdout, _ = runCLI(t, append([]string{"verify"}, tiers...)...)
	if code != exitOK {
		t.Errorf("verify all: exit %d, want %d (c3 and c2 are recoverable)", code, exitOK)
	}
	if l := strings.Join(strings.Fields(lineOf(t, stdout, "c2")), " "); !strings.HasPrefix(l, "c2 2 yes cache damaged: the manifest in node1's cache: "+checksum) {
		t.Errorf("verify line of c2 = %q", l)
	}
	if l := strings.Join(strings.Fields(lineOf(t, stdout, "c1")), " "); !strings.HasPrefix(l, "c1 ? no damaged: the shared tier's manifest: "+checksum) ||
		!strings.HasSuffix(l, "no manifest of it decodes") {
		t.Errorf("verify line of c1 = %q", l)
	}
	if l := strings.Join(strings.Fields(lineOf(t, stdout, "c3")), " "); !strings.HasPrefix(l, "c3 3 yes cache damaged: the shared tier's manifest: "+checksum) {
		t.Errorf("verify line of c3 = %q", l)
	}
	if code, _, _ := runCLI(t, append([]string{"verify", "c1"}, tiers...)...); code != exitError {
		t.Errorf("verify c1: exit %d, want %d", code, exitError)
	}
	obj := runJSON(t, append([]string{"verify", "--json"}, tiers...)...)
	for _, it := range obj["checkpoints"].([]any) {
		byName[it.(map[string]any)["name"].(string)] = it.(map[string]any)
	}
	checkDamage("verify c2", byName["c2"], "cache", "node1", "c2/manifest")
	checkDamage("verify c1", byName["c1"], "shared", nil, "c1.manifest")
	checkDamage("verify c3", byName["c3"], "shared", nil, "c3.manifest")
	if byName["c2"]["recoverable"] != true || byName["c2"]["how"] != "cache" || byName["c1"]["recoverable"] != false ||
		byName["c3"]["shared"] != "" {
		t.Errorf("verify --json: %v", byName)
	}
	// inspect of c1 has no manifest to show: an error that says why.
	if code, _, stderr := runCLI(t, append([]string{"inspect", "c1"}, tiers...)...); code != exitError || !strings.Contains(stderr, checksum) {
		t.Errorf("inspect c1: exit %d, %q", code, stderr)
	}
}
