package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/testwait"
)

// writeJob runs a job of 8 ranks on 4 nodes (caches below root, XOR sets of
// 4) that commits the named checkpoints and flushes them to shared.
func writeJob(t *testing.T, root, shared string, names ...string) {
	t.Helper()
	writeJobWith(t, root, shared, ckpt.CompressDefault, 1000, names...)
}

// writeJobWith is writeJob with the stores' compression, each rank r's
// value its checkpoint's name repeated repeat*(r+1) times.
func writeJobWith(t *testing.T, root, shared string, compress ckpt.Compression, repeat int, names ...string) {
	t.Helper()
	sb, err := local.New(shared)
	if err != nil {
		t.Fatal(err)
	}
	comms := ckpt.LocalJob(8)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("node%d", r%4)
			s, err := ckpt.Open(ckpt.Options{Rank: r, Size: 8, Node: node, CacheDir: filepath.Join(root, node),
				Redundancy: "xor:4", Comm: comms[r], Shared: sb, Compress: compress})
			if err != nil {
				errs[r] = err
				return
			}
			for _, name := range names {
				if errs[r] = ckpt.SaveValue(context.Background(), s, name, strings.Repeat(name, repeat*(r+1))); errs[r] != nil {
					return
				}
				if errs[r] = s.Flush(context.Background(), name); errs[r] != nil {
					return
				}
			}
		}()
	}
	testwait.Group(t, &wg, "the ranks")
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

func TestStoreCommands(t *testing.T) {
	root, shared := t.TempDir(), t.TempDir()
	writeJob(t, root, shared, "c1", "c2")
	tiers := []string{"--cache-root", root, "--shared", shared}

	ls := runJSON(t, append([]string{"ls", "--json"}, tiers...)...)
	items, _ := ls["checkpoints"].([]any)
	if len(items) != 2 {
		t.Fatalf("ls lists %d checkpoints: %v", len(items), ls)
	}
	first := items[0].(map[string]any)
	if first["name"] != "c2" || first["shared"] != true || len(first["cache_nodes"].([]any)) != 4 {
		t.Errorf("ls first = %v", first)
	}

	insp := runJSON(t, append([]string{"inspect", "c2", "--json"}, tiers...)...)
	if insp["redundancy"] != "xor:4" || len(insp["parts"].([]any)) != 8 {
		t.Errorf("inspect = %v", insp)
	}

	how := func() string {
		v := runJSON(t, append([]string{"verify", "c2", "--json"}, tiers...)...)
		return v["checkpoints"].([]any)[0].(map[string]any)["how"].(string)
	}
	if got := how(); got != ckpt.SourceCache {
		t.Errorf("intact: how = %s", got)
	}
	os.RemoveAll(filepath.Join(root, "node1", "c2"))
	if got := how(); got != ckpt.SourceRebuild {
		t.Errorf("one node lost: how = %s", got)
	}
	os.RemoveAll(filepath.Join(root, "node2", "c2"))
	if got := how(); got != ckpt.SourceShared {
		t.Errorf("two nodes lost: how = %s", got)
	}
	// Corrupt the shared copy too: not recoverable, exit 1, and said why.
	p := filepath.Join(shared, "c2", "rank-3.data")
	b, _ := os.ReadFile(p)
	b[10] ^= 1
	os.WriteFile(p, b, 0o644)
	code, stdout, _ := runCLI(t, append([]string{"verify", "c2"}, tiers...)...)
	if code != exitError || !strings.Contains(stdout, "no") || !strings.Contains(stdout, "corrupt") {
		t.Errorf("verify of an unrecoverable checkpoint: exit %d\n%s", code, stdout)
	}
	// Without a name, c1 still recovers: exit 0.
	if code, _, _ := runCLI(t, append([]string{"verify"}, tiers...)...); code != exitOK {
		t.Errorf("verify all: exit %d", code)
	}
	if code, _, stderr := runCLI(t, append([]string{"inspect", "nope"}, tiers...)...); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("inspect of a missing checkpoint: exit %d, %q", code, stderr)
	}
}

// The operator's tools on a checkpoint whose files are stored compressed:
// inspect shows each file's codec and stored size, and verify checks the
// stored form in the caches and on the shared tier.
func TestStoreCommandsCompressed(t *testing.T) {
	root, shared := t.TempDir(), t.TempDir()
	writeJobWith(t, root, shared, ckpt.CompressAuto, 100000, "c1")
	tiers := []string{"--cache-root", root, "--shared", shared}
	insp := runJSON(t, append([]string{"inspect", "c1", "--json"}, tiers...)...)
	f := insp["parts"].([]any)[0].(map[string]any)["files"].([]any)[0].(map[string]any)
	stored, _ := f["stored_bytes"].(json.Number).Int64()
	size, _ := f["bytes"].(json.Number).Int64()
	if f["codec"] == nil || f["codec"] == "" || stored <= 0 || stored >= size {
		t.Fatalf("inspect shows the file %v: want a codec and fewer stored bytes than written", f)
	}
	how := func() string {
		v := runJSON(t, append([]string{"verify", "c1", "--json"}, tiers...)...)
		return v["checkpoints"].([]any)[0].(map[string]any)["how"].(string)
	}
	if got := how(); got != ckpt.SourceCache {
		t.Errorf("intact: how = %s", got)
	}
	os.RemoveAll(filepath.Join(root, "node1", "c1"))
	os.RemoveAll(filepath.Join(root, "node2", "c1"))
	if got := how(); got != ckpt.SourceShared {
		t.Errorf("two nodes lost: how = %s", got)
	}
}
