package uncoord

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog"
)

// twoCopies keeps rank r's checkpoints in node/ then protector/ under root.
func twoCopies(root string) Checkpoints {
	return Checkpoints{Dirs: func(int) ([]string, error) {
		return []string{filepath.Join(root, "node"), filepath.Join(root, "protector")}, nil
	}}
}

func snapBytes(t *testing.T) []byte {
	t.Helper()
	s := Snapshot{Point: msglog.Point{Index: 3}, Pending: []Message{{From: 1, Data: []byte("pending")}}}
	return s.Bytes()
}

func TestCheckpointsSaveLoad(t *testing.T) {
	root := t.TempDir()
	c := twoCopies(root)
	if _, _, err := c.Load(2); !errors.Is(err, ErrNoCheckpoint) || errors.Is(err, ErrCannotServe) {
		t.Fatalf("Load before any Save: %v, want ErrNoCheckpoint only", err)
	}
	snap := snapBytes(t)
	if err := c.Save(2, []byte("state 1"), snap); err != nil {
		t.Fatal(err)
	}
	// A second checkpoint replaces the first, and a temporary file a
	// crash left behind is not read; the next Save removes it.
	if err := c.Save(2, []byte("state 2"), snap); err != nil {
		t.Fatal(err)
	}
	nodeCkpt := ckptPath(filepath.Join(root, "node"), 2)
	torn, err := os.CreateTemp(filepath.Dir(nodeCkpt), "."+filepath.Base(nodeCkpt)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	torn.WriteString("torn")
	torn.Close()
	state, s, err := c.Load(2)
	if err != nil || string(state) != "state 2" || !bytes.Equal(s, snap) {
		t.Fatalf("Load = %q, %x, %v; want state 2 and the snapshot", state, s, err)
	}
	if _, err := DecodeSnapshot(s, 2); err != nil {
		t.Fatalf("the snapshot loaded does not decode: %v", err)
	}
	for _, d := range []string{"node", "protector"} {
		if _, err := os.Stat(ckptPath(filepath.Join(root, d), 2)); err != nil {
			t.Errorf("no copy in %s: %v", d, err)
		}
	}
	if _, _, err := c.Load(3); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("another rank's Load: %v, want ErrNoCheckpoint", err)
	}
	if err := c.Save(2, []byte("state 3"), snap); err != nil {
		t.Fatal(err)
	}
	if es, err := os.ReadDir(filepath.Dir(nodeCkpt)); err != nil || len(es) != 1 {
		t.Errorf("after the next Save the directory holds %v (%v), want only the checkpoint", es, err)
	}
}

// The rank's node lost with its cache: the protector's copy serves. A
// damaged copy is skipped for a sound one; when every copy is damaged, the
// rank cannot recover alone, and no byte of them is returned.
func TestCheckpointsSurviveTheNodeAndDetectDamage(t *testing.T) {
	root := t.TempDir()
	c := twoCopies(root)
	snap := snapBytes(t)
	if err := c.Save(0, []byte("the state"), snap); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "node")); err != nil {
		t.Fatal(err)
	}
	if state, _, err := c.Load(0); err != nil || string(state) != "the state" {
		t.Fatalf("node lost: Load = %q, %v; want the protector's copy", state, err)
	}
	if err := c.Save(0, []byte("the state"), snap); err != nil {
		t.Fatal(err)
	}
	own := ckptPath(filepath.Join(root, "node"), 0)
	prot := ckptPath(filepath.Join(root, "protector"), 0)
	flip := func(path string, at int) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at%len(b)] ^= 0x40
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flip(own, 8)
	if state, _, err := c.Load(0); err != nil || string(state) != "the state" {
		t.Fatalf("own copy damaged: Load = %q, %v; want the protector's copy", state, err)
	}
	for name, damage := range map[string]func(){
		"a flipped byte": func() { flip(prot, 9) },
		"truncated":      func() { b, _ := os.ReadFile(prot); os.WriteFile(prot, b[:len(b)-5], 0o600) },
		"not a checkpoint": func() {
			os.WriteFile(prot, bytes.Repeat([]byte{'x'}, 64), 0o600)
		},
	} {
		if err := c.Save(0, []byte("the state"), snap); err != nil {
			t.Fatal(err)
		}
		flip(own, 20)
		damage()
		state, s, err := c.Load(0)
		if !errors.Is(err, ErrCannotServe) || errors.Is(err, ErrNoCheckpoint) || state != nil || s != nil {
			t.Errorf("%s, and the own copy flipped: Load = %q, %x, %v; want ErrCannotServe and nothing", name, state, s, err)
		}
	}
}

// A Save that cannot write a copy fails; what it wrote before stays
// readable, and a Dirs error is returned by both.
func TestCheckpointsSaveErrors(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Checkpoints{Dirs: func(int) ([]string, error) {
		return []string{filepath.Join(root, "node"), filepath.Join(file, "protector")}, nil
	}}
	if err := c.Save(1, []byte("s"), snapBytes(t)); err == nil {
		t.Fatal("Save to a directory under a file: no error")
	}
	if state, _, err := c.Load(1); err != nil || string(state) != "s" {
		t.Errorf("after a failed Save: Load = %q, %v; want the copy written", state, err)
	}
	boom := errors.New("no node for the rank")
	bad := Checkpoints{Dirs: func(int) ([]string, error) { return nil, boom }}
	if err := bad.Save(1, nil, nil); !errors.Is(err, boom) {
		t.Errorf("Save with Dirs failing: %v", err)
	}
	if _, _, err := bad.Load(1); !errors.Is(err, boom) {
		t.Errorf("Load with Dirs failing: %v", err)
	}
}

// Remove deletes every copy (and what a crashed Save left); Load then
// finds none. Removing what is not there is no error.
func TestCheckpointsRemove(t *testing.T) {
	root := t.TempDir()
	c := twoCopies(root)
	if err := c.Remove(2); err != nil {
		t.Fatalf("Remove before any Save: %v", err)
	}
	if err := c.Save(2, []byte("state"), snapBytes(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Load(2); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Load after Remove: %v, want ErrNoCheckpoint", err)
	}
	for _, d := range []string{"node", "protector"} {
		if _, err := os.Stat(ckptPath(filepath.Join(root, d), 2)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's copy: %v, want it gone", d, err)
		}
	}
}
