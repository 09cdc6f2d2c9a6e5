package manifest

import (
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// sample is a small valid manifest: 4 ranks, one XOR set.
func sample() *Manifest {
	h := HashBytes([]byte("x"))
	m := &Manifest{
		Version: Version,
		Meta: Meta{
			Name: "step-100", ID: 7, Created: time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC),
			Ranks: 4, Scheme: "xor:4", SetSize: 4, M: 1, Sets: [][]int{{0, 1, 2, 3}}, Level: LevelCache,
		},
	}
	for r := range 4 {
		m.Parts = append(m.Parts, Part{
			Rank: r, Node: "node" + string(rune('a'+r)), Set: 0, Member: r,
			Files:  []File{{Rank: r, Name: "state", Size: 1 << 20, Hash: h}, {Rank: r, Name: "aux", Size: 0, Hash: HashBytes(nil)}},
			Parity: []File{{Rank: r, Name: "xor.0", Size: 1 << 18, Hash: h}},
		})
	}
	return m
}

func TestValidateRules(t *testing.T) {
	if err := sample().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(m *Manifest)
		want string
		is   error
	}{
		{func(m *Manifest) { m.Version = 2 }, "unsupported manifest version 2, this build reads version 1", ErrVersion},
		{func(m *Manifest) { m.Name = "../x" }, `checkpoint name: invalid name "../x": starts with '.'`, ErrBadName},
		{func(m *Manifest) { m.ID = 0 }, `checkpoint "step-100" has id 0`, ErrInvalid},
		{func(m *Manifest) { m.Created = time.Time{} }, "no creation time", ErrInvalid},
		{func(m *Manifest) { m.Created = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "outside years 1 to 9999", ErrInvalid},
		{func(m *Manifest) { m.Ranks = 0 }, "0 ranks, want at least 1", ErrInvalid},
		{func(m *Manifest) { m.Ranks = 5 }, "5 ranks but 4 parts", ErrInvalid},
		{func(m *Manifest) { m.Scheme = "" }, "empty scheme", ErrInvalid},
		{func(m *Manifest) { m.Scheme = "xor\n4" }, "control character U+000A", ErrInvalid},
		{func(m *Manifest) { m.Scheme = strings.Repeat("x", 300) }, "300 bytes, longer than 255", ErrInvalid},
		{func(m *Manifest) { m.Parts[0].Node = "n\xff" }, `rank 0: node "n\xff": not valid UTF-8`, ErrInvalid},
		{func(m *Manifest) { m.SetSize = 0 }, `scheme "xor:4": n = 0, want at least 1`, ErrInvalid},
		{func(m *Manifest) { m.M = 4 }, `scheme "xor:4": m = 4, want 0 ≤ m < n = 4`, ErrInvalid},
		{func(m *Manifest) { m.M = -1 }, "m = -1", ErrInvalid},
		{func(m *Manifest) { m.Level = "tape" }, `level "tape", want "cache" or "shared"`, ErrInvalid},
		{func(m *Manifest) { m.Sets = nil }, "no redundancy sets", ErrInvalid},
		{func(m *Manifest) { m.Sets = [][]int{{0, 1, 2, 3, 4}} }, "set 0: rank 4 out of range [0, 4)", ErrInvalid},
		{func(m *Manifest) { m.Sets = [][]int{{0, 1, 2, 2}} }, "rank 2 is in sets 0 and 0", ErrInvalid},
		{func(m *Manifest) { m.Sets = [][]int{{0, 1, 2}} }, "rank 3 is in no set", ErrInvalid},
		{func(m *Manifest) { m.Sets = [][]int{{0, 1, 2}, {3}} }, "set 1 has 1 members, not more than m = 1", ErrInvalid},
		{func(m *Manifest) { m.Parts[1], m.Parts[2] = m.Parts[2], m.Parts[1] }, "part 1 is rank 2; parts must be in rank order 0..3", ErrInvalid},
		{func(m *Manifest) { m.Parts[3].Rank = 9 }, "part 3: rank 9 out of range [0, 4)", ErrInvalid},
		{func(m *Manifest) { m.Parts[2].Node = "" }, "rank 2: empty node", ErrInvalid},
		{func(m *Manifest) { m.Parts[2].Set = 1 }, "rank 2: set 1 out of range [0, 1)", ErrInvalid},
		{func(m *Manifest) { m.Parts[2].Member = 4 }, "rank 2: member 4 out of range [0, 4) of set 0", ErrInvalid},
		{func(m *Manifest) { m.Parts[2].Member = 1 }, "rank 2 claims member 1 of set 0, which is rank 1", ErrInvalid},
		{func(m *Manifest) { m.Parts[1].Files[0].Size = -5 }, `rank 1: file "state" has negative size -5`, ErrInvalid},
		{func(m *Manifest) { m.Parts[1].Files[1].Name = "state" }, `rank 1: file "state" repeats the name of a file`, ErrInvalid},
		{func(m *Manifest) { m.Parts[1].Parity[0].Name = "aux" }, `rank 1: parity file "aux" repeats the name of a file`, ErrInvalid},
		{func(m *Manifest) { m.Parts[1].Files[0].Name = "a/b" }, `rank 1: file: invalid name "a/b"`, ErrBadName},
		{func(m *Manifest) { m.Parts[1].Parity[0].Rank = 0 }, `rank 1: parity file "xor.0" carries rank 0`, ErrInvalid},
	} {
		m := sample()
		tc.edit(m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("got %v, want %q (%v)", err, tc.want, tc.is)
		}
		if _, encErr := Encode(m); encErr == nil || encErr.Error() != err.Error() {
			t.Errorf("Encode error %v, want the Validate error", encErr)
		}
	}
}

func TestMerge(t *testing.T) {
	want := sample()
	parts := append([]Part(nil), want.Parts...)
	rand.New(rand.NewSource(3)).Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	got, err := Merge(parts, want.Meta)
	if err != nil || !sameManifest(got, want) {
		t.Fatalf("Merge = %+v, %v", got, err)
	}
	// The result owns its memory.
	parts[0].Files[0].Name = "changed"
	want.Sets[0][0] = 99
	if err := got.Validate(); err != nil {
		t.Errorf("Merge result shares memory with its arguments: %v", err)
	}

	m := sample()
	for _, tc := range []struct {
		parts []Part
		want  string
	}{
		{m.Parts[:3], "incomplete checkpoint: no part from rank 3 (1 of 4 ranks missing)"},
		{m.Parts[:1], "no part from ranks 1, 2, 3 (3 of 4 ranks missing)"},
		{nil, "no part from ranks 0, 1, 2, 3 (4 of 4 ranks missing)"},
		{append(m.Parts[:4:4], m.Parts[2]), "rank 2 sent more than one part"},
		{append(m.Parts[:4:4], Part{Rank: 4}), "part from rank 4, out of range [0, 4)"},
		{append(m.Parts[:4:4], Part{Rank: -1}), "part from rank -1, out of range [0, 4)"},
	} {
		_, err := Merge(tc.parts, m.Meta)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrIncomplete) {
			t.Errorf("Merge error %v, want %q", err, tc.want)
		}
	}
	meta := m.Meta
	meta.Ranks = 0
	if _, err := Merge(m.Parts, meta); !errors.Is(err, ErrInvalid) {
		t.Errorf("Merge with 0 ranks: %v", err)
	}
	bad := append([]Part(nil), m.Parts...)
	bad[1].Node = ""
	if _, err := Merge(bad, m.Meta); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "rank 1: empty node") {
		t.Errorf("Merge of an invalid part: %v", err)
	}
	many := make([]int, 30)
	for i := range many {
		many[i] = i
	}
	if got := rankList(many); got != "ranks 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …" {
		t.Errorf("rankList = %q", got)
	}
}
