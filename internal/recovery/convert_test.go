package recovery

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

func TestFromManifest(t *testing.T) {
	m := &manifest.Manifest{
		Version: manifest.Version,
		Meta: manifest.Meta{Name: "ckpt.4", ID: 4, Created: time.Unix(1, 0).UTC(), Ranks: 3,
			Scheme: "xor:3", SetSize: 3, M: 1, Sets: [][]int{{2, 0, 1}}, Level: manifest.LevelCache},
		Parts: []manifest.Part{
			{Rank: 0, Node: "a", Set: 0, Member: 1},
			{Rank: 1, Node: "b", Set: 0, Member: 2},
			{Rank: 2, Node: "c", Set: 0, Member: 0},
		},
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	got := FromManifest(m)
	want := Checkpoint{Name: "ckpt.4", ID: 4, Ranks: 3, Scheme: "xor:3", M: 1,
		Sets: [][]int{{2, 0, 1}}, Nodes: []string{"a", "b", "c"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	got.Sets[0][0] = 9
	if m.Sets[0][0] != 2 {
		t.Error("FromManifest shares the manifest's sets")
	}
}

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want State
	}{
		{nil, Intact},
		{fs.ErrNotExist, Missing},
		{fmt.Errorf("ckpt.1/rank-3.parity: %w", storage.ErrNotExist), Missing},
		{fmt.Errorf("ckpt.1/rank-3/state: %w", fs.ErrNotExist), Missing},
		{fmt.Errorf("ckpt.1/rank-3/state: %w: 10 bytes, the manifest says 12", manifest.ErrCorrupt), Corrupt},
		{errors.New("input/output error"), Corrupt},
	} {
		if got := StateOf(tc.err); got != tc.want {
			t.Errorf("StateOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
