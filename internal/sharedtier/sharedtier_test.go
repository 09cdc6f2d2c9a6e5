package sharedtier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

// checkpointManifest is a cached checkpoint's manifest of ranks ranks, one
// file each.
func checkpointManifest(t *testing.T, name string, id uint64, ranks int) *manifest.Manifest {
	t.Helper()
	var parts []manifest.Part
	sets := make([][]int, ranks)
	for r := range ranks {
		data := []byte(fmt.Sprintf("%s rank %d", name, r))
		parts = append(parts, manifest.Part{Rank: r, Node: fmt.Sprintf("node%d", r), Set: r,
			Files: []manifest.File{{Rank: r, Name: "state", Size: int64(len(data)), Hash: manifest.ContentHashBytes(data)}}})
		sets[r] = []int{r}
	}
	m, err := manifest.Merge(parts, manifest.Meta{Name: name, ID: id, Created: time.Unix(1700000000, 0).UTC(),
		Ranks: ranks, Scheme: "single", SetSize: 1, Sets: sets, Level: manifest.LevelCache})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// flush writes m's data objects and, if commit, its manifest.
func flush(t *testing.T, b storage.Backend, m *manifest.Manifest, commit bool) {
	t.Helper()
	ctx := context.Background()
	for _, p := range m.Parts {
		data := []byte(fmt.Sprintf("%s rank %d", m.Name, p.Rank))
		if _, err := storage.Save(ctx, b, DataObject(m.Name, p.Rank), bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	if commit {
		if err := Commit(ctx, b, m); err != nil {
			t.Fatal(err)
		}
	}
}

func names(t *testing.T, b storage.Backend) []string {
	t.Helper()
	ms, err := List(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func objects(t *testing.T, b storage.Backend, prefix string) []string {
	t.Helper()
	var out []string
	if err := b.List(context.Background(), prefix, func(i storage.Info) error { out = append(out, i.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A checkpoint exists exactly when its manifest does: data objects alone
// (a flush cut off) are invisible; committed ones are listed newest first,
// at the shared level.
func TestExistsOnlyWithManifest(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	flush(t, b, checkpointManifest(t, "ck.2", 2, 3), false)
	if ok, err := Exists(ctx, b, "ck.2"); ok || err != nil {
		t.Fatalf("data objects without a manifest: exists %v (%v)", ok, err)
	}
	if got := names(t, b); len(got) != 0 {
		t.Fatalf("lists %v before any commit", got)
	}
	for _, id := range []uint64{1, 3, 2} {
		flush(t, b, checkpointManifest(t, fmt.Sprintf("ck.%d", id), id, 3), true)
	}
	if got, want := names(t, b), []string{"ck.3", "ck.2", "ck.1"}; !slices.Equal(got, want) {
		t.Errorf("lists %v, want %v (newest first)", got, want)
	}
	ms, _ := List(ctx, b)
	if ms[0].Level != manifest.LevelShared {
		t.Errorf("level %q on the tier, want %q", ms[0].Level, manifest.LevelShared)
	}
	if ok, err := Exists(ctx, b, "ck.2"); !ok || err != nil {
		t.Errorf("committed ck.2: exists %v (%v)", ok, err)
	}
}

// A manifest that does not decode is no checkpoint: List skips it.
func TestCorruptManifestSkipped(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	flush(t, b, checkpointManifest(t, "ck.1", 1, 2), true)
	flush(t, b, checkpointManifest(t, "ck.2", 2, 2), true)
	text, err := storage.Load(ctx, b, ManifestObject("ck.2"))
	if err != nil {
		t.Fatal(err)
	}
	text[len(text)/2] ^= 0x40
	if _, err := storage.Save(ctx, b, ManifestObject("ck.2"), bytes.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.1"}) {
		t.Errorf("lists %v with ck.2's manifest corrupt, want [ck.1]", got)
	}
	// Scan reports it, with the checkpoint's name and the failed checksum.
	ms, bad, err := Scan(ctx, b)
	if err != nil || len(ms) != 1 {
		t.Fatalf("Scan = %d manifests, %v", len(ms), err)
	}
	if len(bad) != 1 || bad[0].Name != "ck.2" || bad[0].Object != "ck.2.manifest" || !errors.Is(bad[0].Err, manifest.ErrCorrupt) {
		t.Errorf("Scan's unreadable = %+v, want ck.2.manifest, corrupt", bad)
	}
}

// corruptManifest flips a byte in the middle of checkpoint name's manifest.
func corruptManifest(t *testing.T, b storage.Backend, name string) {
	t.Helper()
	ctx := context.Background()
	text, err := storage.Load(ctx, b, ManifestObject(name))
	if err != nil {
		t.Fatal(err)
	}
	text[len(text)/2] ^= 0x40
	if _, err := storage.Save(ctx, b, ManifestObject(name), bytes.NewReader(text)); err != nil {
		t.Fatal(err)
	}
}

// Check passes a checkpoint whose objects are all there at their sizes
// and names the rank whose object is missing or of another size.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	m := checkpointManifest(t, "ck.1", 1, 3)
	flush(t, b, m, true)
	if err := Check(ctx, b, m); err != nil {
		t.Fatalf("intact: %v", err)
	}
	if _, err := storage.Save(ctx, b, DataObject("ck.1", 1), bytes.NewReader([]byte("short"))); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, b, m); !errors.Is(err, manifest.ErrCorrupt) || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("wrong size: %v", err)
	}
	m2 := checkpointManifest(t, "ck.2", 2, 3)
	flush(t, b, m2, true)
	if err := b.Remove(ctx, DataObject("ck.2", 2)); err != nil {
		t.Fatal(err)
	}
	if err := Check(ctx, b, m2); !errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "rank 2") {
		t.Errorf("missing: %v", err)
	}
}

// The retention rule step by step: the keep newest stay, and beyond them
// the newest recoverable one; keep ≤ 0 keeps all.
func TestDoomed(t *testing.T) {
	c := func(name string, ok bool) Candidate { return Candidate{Name: name, Recoverable: ok} }
	for _, tc := range []struct {
		what string
		list []Candidate
		keep int
		want []string
	}{
		{"keep 0 keeps all", []Candidate{c("c3", false), c("c2", true)}, 0, nil},
		{"empty", nil, 2, nil},
		{"all recoverable: order alone", []Candidate{c("c4", true), c("c3", true), c("c2", true), c("c1", true)}, 2, []string{"c2", "c1"}},
		{"newest damaged: the next recoverable stays", []Candidate{c("c4", false), c("c3", true), c("c2", true)}, 1, []string{"c2"}},
		{"two newest damaged", []Candidate{c("c5", false), c("c4", false), c("c3", true), c("c2", true), c("c1", true)}, 1, []string{"c4", "c2", "c1"}},
		{"recoverable within keep: nothing extra", []Candidate{c("c4", false), c("c3", true), c("c2", true)}, 2, []string{"c2"}},
		{"none recoverable: order alone", []Candidate{c("c3", false), c("c2", false), c("c1", false)}, 1, []string{"c2", "c1"}},
		{"keep beyond the listing", []Candidate{c("c2", false), c("c1", false)}, 5, nil},
	} {
		if got := Doomed(tc.list, tc.keep); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Doomed = %v, want %v", tc.what, got, tc.want)
		}
	}
}

// On the tier: with keep 1, newer checkpoints with a corrupt manifest or
// a lost object do not cost the last recoverable one, which a later
// healthy checkpoint then replaces.
func TestRetainKeepsNewestRecoverable(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	flush(t, b, checkpointManifest(t, "ck.1", 1, 2), true)
	flush(t, b, checkpointManifest(t, "ck.2", 2, 2), true)
	if err := Retain(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.2"}) {
		t.Fatalf("healthy: %v", got)
	}
	// ck.3 lost a rank's object before retention ran.
	m3 := checkpointManifest(t, "ck.3", 3, 2)
	flush(t, b, m3, true)
	b.Remove(ctx, DataObject("ck.3", 1))
	if err := Retain(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.3", "ck.2"}) {
		t.Errorf("ck.3 damaged: %v, want [ck.3 ck.2]", got)
	}
	// ck.4's object is short: ck.3 goes, ck.2 stays.
	flush(t, b, checkpointManifest(t, "ck.4", 4, 2), true)
	storage.Save(ctx, b, DataObject("ck.4", 0), bytes.NewReader([]byte("x")))
	if err := Retain(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.4", "ck.2"}) {
		t.Errorf("ck.4 damaged: %v, want [ck.4 ck.2]", got)
	}
	// ck.5's manifest is corrupt: it is no checkpoint; retention leaves it
	// (its age is unknown) and ck.2 stays.
	flush(t, b, checkpointManifest(t, "ck.5", 5, 2), true)
	corruptManifest(t, b, "ck.5")
	if err := Retain(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.4", "ck.2"}) {
		t.Errorf("ck.5's manifest corrupt: %v, want [ck.4 ck.2]", got)
	}
	if _, bad, _ := Scan(ctx, b); len(bad) != 1 || bad[0].Name != "ck.5" {
		t.Errorf("ck.5's damaged manifest: %+v", bad)
	}
	// A healthy ck.6: the rule is order alone again.
	flush(t, b, checkpointManifest(t, "ck.6", 6, 2), true)
	if err := Retain(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.6"}) {
		t.Errorf("ck.6 healthy: %v, want [ck.6]", got)
	}
	if left := objects(t, b, "ck.2/"); len(left) != 0 {
		t.Errorf("ck.2 left objects: %v", left)
	}
}

// Retain keeps the newest, removing each older checkpoint whole (manifest
// and every object under its name, leftovers of a flush included).
func TestRetain(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	for id := uint64(1); id <= 4; id++ {
		flush(t, b, checkpointManifest(t, fmt.Sprintf("ck.%d", id), id, 2), true)
	}
	if _, err := storage.Save(ctx, b, "ck.1/staged-node0", bytes.NewReader([]byte("[0]"))); err != nil {
		t.Fatal(err)
	}
	if err := Retain(ctx, b, 0); err != nil || len(names(t, b)) != 4 {
		t.Fatalf("keep 0 removed something: %v %v", names(t, b), err)
	}
	if err := Retain(ctx, b, 2); err != nil {
		t.Fatal(err)
	}
	if got := names(t, b); !slices.Equal(got, []string{"ck.4", "ck.3"}) {
		t.Errorf("keep 2: %v", got)
	}
	for _, gone := range []string{"ck.1", "ck.2"} {
		if left := objects(t, b, gone); len(left) != 0 {
			t.Errorf("%s: objects left after retention: %v", gone, left)
		}
	}
	if left := objects(t, b, "ck.4/"); len(left) != 2 {
		t.Errorf("ck.4 kept %v, want its 2 data objects", left)
	}
	// Removing what is already gone is no error.
	if err := Remove(ctx, b, "ck.1"); err != nil {
		t.Errorf("removing a removed checkpoint: %v", err)
	}
}

// failingList makes the backend's listing fail, as a tier that cannot be
// reached does.
type failingList struct{ storage.Backend }

var errUnreachable = errors.New("tier unreachable")

func (failingList) List(context.Context, string, func(storage.Info) error) error {
	return errUnreachable
}

// A tier that cannot be listed is an error, not an empty tier: a restart
// must not conclude that no shared checkpoint exists, nor retention that
// nothing needs removing.
func TestListErrors(t *testing.T) {
	ctx := context.Background()
	b := failingList{mem.New()}
	if _, err := List(ctx, b); !errors.Is(err, errUnreachable) {
		t.Errorf("List: %v, want the listing's error", err)
	}
	if err := Retain(ctx, b, 1); !errors.Is(err, errUnreachable) {
		t.Errorf("Retain: %v, want the listing's error", err)
	}
	if err := Remove(ctx, b, "ck.1"); !errors.Is(err, errUnreachable) {
		t.Errorf("Remove: %v, want the listing's error", err)
	}
}
