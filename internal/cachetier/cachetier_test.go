package cachetier

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

func put(t *testing.T, b storage.Backend, name, data string) {
	t.Helper()
	if _, err := storage.Save(context.Background(), b, name, strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, b storage.Backend) []string {
	var out []string
	b.List(context.Background(), "", func(i storage.Info) error { out = append(out, i.Name); return nil })
	return out
}

func commit(t *testing.T, b storage.Backend, name string, id uint64) {
	t.Helper()
	m, err := manifest.Merge([]manifest.Part{{Rank: 0, Node: "n", Files: []manifest.File{{Rank: 0, Name: "f", Size: 1}}}},
		manifest.Meta{Name: name, ID: id, Created: time.Unix(1, 0).UTC(), Ranks: 1, Scheme: "single", SetSize: 1, Sets: [][]int{{0}}, Level: manifest.LevelCache})
	if err != nil {
		t.Fatal(err)
	}
	text, err := manifest.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	put(t, b, FileObject(name, 0, "f"), "x")
	put(t, b, ManifestObject(name), string(text))
}

// Only a checkpoint's own manifest marks it: a rank's file named
// "manifest" does not, nor does a manifest that fails to decode.
func TestList(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	commit(t, b, "c1", 1)
	commit(t, b, "c2", 2)
	put(t, b, FileObject("c3", 0, "manifest"), "application data")
	put(t, b, ManifestObject("c4"), "torn")
	ms, err := List(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name)
	}
	if !slices.Equal(got, []string{"c2", "c1"}) {
		t.Errorf("List = %v, want [c2 c1]", got)
	}
	if _, err := Load(ctx, b, "c3"); err == nil {
		t.Error("Load of a checkpoint without a manifest succeeded")
	}
	// Scan lists the same and reports the manifest that does not decode,
	// with its checkpoint's name and why.
	ms, bad, err := Scan(ctx, b)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Scan = %d manifests, %v", len(ms), err)
	}
	if len(bad) != 1 || bad[0].Name != "c4" || bad[0].Object != "c4/manifest" || !errors.Is(bad[0].Err, manifest.ErrCorrupt) {
		t.Errorf("Scan's unreadable = %+v, want c4/manifest, corrupt", bad)
	}
}

// RemovePart takes one rank's files and parity, not a rank whose number
// starts with the same digits, and not the manifest.
func TestRemovePart(t *testing.T) {
	b := mem.New()
	for _, n := range []string{FileObject("c", 1, "a"), ParityObject("c", 1), FileObject("c", 10, "a"), ParityObject("c", 10), ManifestObject("c")} {
		put(t, b, n, "x")
	}
	RemovePart(context.Background(), b, "c", 1)
	want := []string{"c/manifest", "c/rank-10.parity", "c/rank-10/a"}
	if got := names(t, b); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}

// Retention removes what it is told to, a damaged manifest's checkpoint
// too, but nothing pinned, and skips what the cache does not hold.
func TestRetain(t *testing.T) {
	b := mem.New()
	for i, n := range []string{"c1", "c2", "c3", "c4"} {
		commit(t, b, n, uint64(i+1))
	}
	put(t, b, ManifestObject("c0"), "torn")
	put(t, b, FileObject("c0", 0, "f"), "x")
	doomed := []string{"c2", "c1", "c0", "elsewhere"}
	if err := Retain(context.Background(), b, doomed, func(name string) bool { return name == "c1" }); err != nil {
		t.Fatal(err)
	}
	want := []string{"c1/manifest", "c1/rank-0/f", "c3/manifest", "c3/rank-0/f", "c4/manifest", "c4/rank-0/f"}
	if got := names(t, b); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}
