package manifest

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"time"
)

// randomManifest returns a valid manifest exercising the corners of the
// format: odd names, empty and non-empty file lists, huge ids, non-UTC times.
func randomManifest(r *rand.Rand) *Manifest {
	ranks := 1 + r.Intn(6)
	perm := r.Perm(ranks)
	var sets [][]int
	for len(perm) > 0 {
		k := 1 + r.Intn(len(perm))
		sets = append(sets, slices.Clone(perm[:k]))
		perm = perm[k:]
	}
	smallest := len(slices.MinFunc(sets, func(a, b []int) int { return len(a) - len(b) }))
	m := r.Intn(smallest)
	n := m + 1 + r.Intn(4)
	ids := []uint64{1, 2, 42, 1 << 53, 1<<53 + 1, 1<<64 - 1}
	zones := []*time.Location{time.UTC, time.FixedZone("X", 5*3600+1800), time.FixedZone("Y", -7*3600)}
	created := time.Unix(r.Int63n(1<<36), r.Int63n(1e9)).In(zones[r.Intn(len(zones))])
	levels := []Level{LevelCache, LevelShared}
	schemes := []string{"single", "partner", "xor:4", "rs:8+2", `we"ird<&>`}
	man := &Manifest{
		Version: Version,
		Meta: Meta{
			Name: randomName(r), ID: ids[r.Intn(len(ids))], Created: created, Ranks: ranks,
			Scheme: schemes[r.Intn(len(schemes))], SetSize: n, M: m, Sets: sets, Level: levels[r.Intn(2)],
		},
		Parts: make([]Part, ranks),
	}
	for s, set := range sets {
		for i, rank := range set {
			p := Part{Rank: rank, Node: fmt.Sprintf("node-%d", r.Intn(3)), Set: s, Member: i}
			used := map[string]bool{}
			files := func(count int) []File {
				var out []File
				for range count {
					name := randomName(r)
					if used[name] {
						continue
					}
					used[name] = true
					var h Hash
					r.Read(h[:])
					out = append(out, File{Rank: rank, Name: name, Size: r.Int63n(1 << 40), Hash: h})
				}
				return out
			}
			p.Files = files(r.Intn(4))
			for i := range p.Files {
				// Some data files stored compressed (parity never is).
				if r.Intn(2) == 0 {
					f := &p.Files[i]
					f.Codec, f.Filter = []string{"zstd", "s2"}[r.Intn(2)], []string{"", "shuffle4", "shuffle8"}[r.Intn(3)]
					f.StoredSize = r.Int63n(1 << 40)
					r.Read(f.StoredHash[:])
				}
			}
			p.Parity = files(r.Intn(3))
			man.Parts[rank] = p
		}
	}
	return man
}

func randomName(r *rand.Rand) string {
	alphabet := []string{"a", "b", "z", "0", "9", "-", "_", ".", " ", "é", "日", `"`, "<", "&", "\u2028", "'", "+"}
	var b []byte
	b = append(b, "abc"[r.Intn(3)])
	for range r.Intn(10) {
		b = append(b, alphabet[r.Intn(len(alphabet))]...)
	}
	return string(b)
}

// canonical returns m as Decode would return it: Created in UTC, empty file
// lists nil.
func canonical(m *Manifest) *Manifest {
	c := *m
	c.Created = m.Created.UTC()
	c.Parts = slices.Clone(m.Parts)
	for i := range c.Parts {
		if len(c.Parts[i].Files) == 0 {
			c.Parts[i].Files = nil
		}
		if len(c.Parts[i].Parity) == 0 {
			c.Parts[i].Parity = nil
		}
	}
	return &c
}

func sameManifest(a, b *Manifest) bool { return reflect.DeepEqual(canonical(a), canonical(b)) }
