package ckpt

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/internal/uncoord"
)

// A rank's own checkpoint (uncoordinated strategy): its files, in the
// order created, read back whole; what it does not offer says so.
func TestOwnCheckpointRoundTrip(t *testing.T) {
	oc := &ownCheckpoint{name: "step-10"}
	c := &Checkpoint{own: oc}
	for _, f := range []struct{ name, data string }{{"state", "abc"}, {"empty", ""}, {"more", "0123456789"}} {
		w, err := c.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.data)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Errorf("%s: a write after Close succeeded", f.name)
		}
	}
	if _, err := c.Create("state"); err == nil {
		t.Error("a file created twice")
	}
	if _, err := c.Create("../x"); err == nil {
		t.Error("a file name with a path accepted")
	}
	for _, err := range []error{func() error { _, err := c.Path("p"); return err }(), c.Commit(t.Context()), c.Abort()} {
		if !errors.Is(err, ErrStrategy) {
			t.Errorf("%v, want ErrStrategy", err)
		}
	}
	b, err := oc.encode()
	if err != nil {
		t.Fatal(err)
	}
	r, err := restoredOwn(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "step-10" || r.Source != SourceOwn || r.ID() != 0 || !slices.Equal(r.Files(), []string{"state", "empty", "more"}) {
		t.Fatalf("restored %q from %s, id %d, files %v", r.Name(), r.Source, r.ID(), r.Files())
	}
	for name, want := range map[string]string{"state": "abc", "empty": "", "more": "0123456789"} {
		rd, err := r.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rd)
		rd.Close()
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := r.Open("none"); err == nil {
		t.Error("opened a file the checkpoint does not have")
	}
	if _, err := r.Path("state"); !errors.Is(err, ErrStrategy) {
		t.Errorf("Path: %v, want ErrStrategy", err)
	}
	// A file left open is not saved; what does not decode cannot serve.
	open := &ownCheckpoint{name: "x"}
	if _, err := (&Checkpoint{own: open}).Create("f"); err != nil {
		t.Fatal(err)
	}
	if _, err := open.encode(); err == nil {
		t.Error("a checkpoint with a file not closed encoded")
	}
	for _, bad := range [][]byte{nil, []byte("nope"), b[:len(b)-1], append(slices.Clone(b), 0)} {
		if _, err := restoredOwn(bad); !errors.Is(err, uncoord.ErrCannotServe) {
			t.Errorf("restoredOwn(%q): %v, want ErrCannotServe", bad, err)
		}
	}
}

// Under the uncoordinated strategy the store refuses the engine's
// collective calls, which the coordinator would abort after a lone
// recovery, instead of letting them hang or abort the job later.
func TestStoreRefusesCollectivesAlone(t *testing.T) {
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.alone = true
	_, serr := s.Start("c1")
	_, rerr := s.Restart(t.Context())
	for what, err := range map[string]error{"Start": serr, "Restart": rerr, "Flush": s.Flush(t.Context(), "c1")} {
		if !errors.Is(err, ErrStrategy) {
			t.Errorf("%s: %v, want ErrStrategy", what, err)
		}
	}
	// The same store in a coordinated job starts checkpoints.
	s.alone = false
	if _, err := s.Start("c1"); err != nil {
		t.Errorf("Start, coordinated: %v", err)
	}
}
