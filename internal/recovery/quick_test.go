package recovery

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/klauspost/reedsolomon"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// The planner against brute force. The brute force does not count lost
// members: it lays every set out as internal/redundancy does (rotated rows,
// one shard of every row per member), fills the shards with random bytes,
// encodes the parity with klauspost/reedsolomon (XOR for one parity shard,
// a copy for PARTNER), erases every shard the survivors cannot supply and
// tries to decode each row, comparing the result with the original bytes.

// scheme is a redundancy scheme of the random cases.
type scheme struct {
	label   string
	m, size int // tolerance and nominal set size
}

func randomScheme(rng *rand.Rand) scheme {
	switch rng.IntN(4) {
	case 0:
		return scheme{"single", 0, 1}
	case 1:
		return scheme{"partner", 1, 2}
	case 2:
		s := 2 + rng.IntN(7) // XOR sets of 2 to 8
		return scheme{fmt.Sprintf("xor:%d", s), 1, s}
	default:
		k, m := 1+rng.IntN(4), 2+rng.IntN(2) // RS K+M, K 1..4, M 2..3
		return scheme{fmt.Sprintf("rs:%d+%d", k, m), m, k + m}
	}
}

// randomCheckpoint makes a checkpoint of a random scheme whose sets have the
// nominal size or up to two more members (FormSets merges a remainder into
// the sets), written by ranks on random nodes, and a restarted job on
// which some nodes are lost, some ranks moved and some files damaged. It
// returns the job's Input with the one candidate, its holdings checked.
func randomCheckpoint(rng *rand.Rand) Input {
	sc := randomScheme(rng)
	var sets [][]int
	n := 0
	for range 1 + rng.IntN(4) {
		size := sc.size + rng.IntN(3)
		if sc.label == "single" {
			size = 1
		}
		sets = append(sets, make([]int, size))
		n += size
	}
	perm := rng.Perm(n)
	for _, set := range sets {
		for i := range set {
			set[i], perm = perm[0], perm[1:]
		}
	}
	nodes := 1 + rng.IntN(n)
	cp := Checkpoint{Name: "ckpt", ID: 1, Ranks: n, Scheme: sc.label, M: sc.m, Sets: sets,
		Nodes: make([]string, n), Manifests: map[string]State{}, Held: make([]Held, n)}
	lost := map[string]bool{}
	for i := range nodes {
		lost[fmt.Sprintf("n%d", i)] = rng.IntN(10) == 0
	}
	in := Input{Ranks: n, Nodes: make([]string, n), Checkpoints: []Checkpoint{cp}}
	damage := func() State {
		switch rng.IntN(40) {
		case 0:
			return Corrupt
		case 1:
			return Missing
		}
		return Intact
	}
	for r := range n {
		was := fmt.Sprintf("n%d", rng.IntN(nodes))
		cp.Nodes[r] = was
		now := was
		switch {
		case lost[was]:
			now = "spare-" + was
		case rng.IntN(40) == 0:
			now = fmt.Sprintf("n%d", rng.IntN(nodes)) // moved (maybe to where it was)
		}
		in.Nodes[r] = now
		if now == was {
			cp.Held[r] = Held{Data: damage(), Parity: damage()}
		} else {
			cp.Held[r] = Held{Data: Missing, Parity: Missing}
		}
		cp.Manifests[now] = Intact
	}
	in.Checkpoints[0] = cp
	return in
}

var encoders = map[[2]int]reedsolomon.Encoder{}

func encoder(t *testing.T, k, m int) reedsolomon.Encoder {
	key := [2]int{k, m}
	if enc := encoders[key]; enc != nil {
		return enc
	}
	enc, err := reedsolomon.New(k, m)
	if err != nil {
		t.Fatal(err)
	}
	encoders[key] = enc
	return enc
}

// decodes reports whether every row of a set of n members with m parity
// shards decodes when member i can supply shard s of a row exactly when
// has(i, s) — by decoding real bytes.
func decodes(t *testing.T, rng *rand.Rand, n, m int, has func(member, shard int) bool) bool {
	layout, err := redundancy.NewLayout(n, m)
	if err != nil {
		t.Fatal(err)
	}
	k := n - m
	for row := range n {
		orig := make([][]byte, n) // by shard number
		for s := range k {
			orig[s] = make([]byte, 8)
			for i := range orig[s] {
				orig[s][i] = byte(rng.IntN(256))
			}
		}
		for s := k; s < n; s++ {
			orig[s] = make([]byte, 8)
		}
		if m > 0 {
			if err := encoder(t, k, m).Encode(orig); err != nil {
				t.Fatal(err)
			}
		}
		shards := make([][]byte, n)
		missing := false
		for member := range n {
			s := layout.Shard(row, member)
			if has(member, s) {
				shards[s] = slices.Clone(orig[s])
			} else {
				missing = true
			}
		}
		if !missing {
			continue
		}
		if m == 0 {
			return false // nothing to decode from
		}
		if err := encoder(t, k, m).Reconstruct(shards); err != nil {
			return false
		}
		for s := range n {
			if !bytes.Equal(shards[s], orig[s]) {
				t.Fatalf("row %d shard %d decoded wrong", row, s)
			}
		}
	}
	return true
}

func TestDecideAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var kinds [5]int  // plans by Action
	conservative := 0 // refused, though shard by shard the rows decode
	for i := range 4000 {
		in := randomCheckpoint(rng)
		cp := in.Checkpoints[0]
		p, err := Decide(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		kinds[p.Action]++

		// Brute force, member by member: the rebuild protocol takes a
		// survivor's shards only if its data and parity are both intact,
		// and rebuilds a member whole.
		want := true
		var lost []int
		for _, set := range cp.Sets {
			ok := func(member, _ int) bool {
				h := cp.Held[set[member]]
				return h.Data == Intact && h.Parity == Intact
			}
			want = decodes(t, rng, len(set), cp.M, ok) && want
			for i := range set {
				if !ok(i, 0) {
					lost = append(lost, set[i])
				}
			}
		}
		slices.Sort(lost)
		got := p.Action == UseCache || p.Action == Rebuild
		if got != want {
			t.Fatalf("case %d: %s sets %v held %v: planner %v, brute force recoverable=%v\n%s", i, cp.Scheme, cp.Sets, cp.Held, p.Action, want, p)
		}
		switch {
		case !want && (p.Action != None || len(p.Skipped) != 1):
			t.Fatalf("case %d: unrecoverable but %s", i, p)
		case want && len(lost) == 0 && p.Action != UseCache:
			t.Fatalf("case %d: nothing lost but %s", i, p)
		case want && len(lost) > 0 && (p.Action != Rebuild || !slices.Equal(p.Rebuilt, lost)):
			t.Fatalf("case %d: lost %v but %s", i, lost, p)
		}
		if p.Action == Rebuild {
			checkRebuild(t, in, p)
		}

		// Shard by shard, a finer rebuild could use a survivor's intact
		// data despite bad parity (or the reverse): whatever the planner
		// rebuilds must decode that way too.
		fine := true
		for _, set := range cp.Sets {
			k := len(set) - cp.M
			fine = decodes(t, rng, len(set), cp.M, func(member, shard int) bool {
				h := cp.Held[set[member]]
				if shard < k {
					return h.Data == Intact
				}
				return h.Parity == Intact
			}) && fine
		}
		if got && !fine {
			t.Fatalf("case %d: planner rebuilds rows that do not decode: %s", i, p)
		}
		if fine && !got {
			conservative++
		}
	}
	t.Logf("plans %v; refused though finer decoding works: %d", kinds, conservative)
	if kinds[UseCache] == 0 || kinds[Rebuild] < 100 || kinds[None] < 100 {
		t.Errorf("the cases miss a kind of outcome: %v", kinds)
	}
}

// checkRebuild checks the sets of a Rebuild plan against the input.
func checkRebuild(t *testing.T, in Input, p Plan) {
	t.Helper()
	cp := in.Checkpoints[0]
	for _, sr := range p.Rebuild {
		set := cp.Sets[sr.Set]
		if !slices.Equal(sr.Ranks, set) || len(sr.Lost) == 0 || len(sr.Lost) > cp.M || len(sr.Lost)+len(sr.Survivors) != len(set) {
			t.Fatalf("set %d %v: %+v", sr.Set, set, sr)
		}
		for _, tg := range sr.Lost {
			if set[tg.Member] != tg.Rank || tg.Node != in.Nodes[tg.Rank] || tg.Was != cp.Nodes[tg.Rank] || cp.Held[tg.Rank].ok() {
				t.Fatalf("set %d: target %+v", sr.Set, tg)
			}
		}
		for _, r := range sr.Survivors {
			if !cp.Held[r].ok() {
				t.Fatalf("set %d: survivor %d is not intact", sr.Set, r)
			}
		}
	}
}

// TestDecideChoice checks the choice among several candidates against a
// naive reading of rules 1 to 3, 9, 10 and 12, and that the plan does not
// depend on the order of the candidates.
func TestDecideChoice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[string]int{}
	for i := range 3000 {
		base := randomCheckpoint(rng)
		in := Input{Ranks: base.Ranks, Nodes: base.Nodes}
		for j := range 1 + rng.IntN(4) {
			cp := base.Checkpoints[0]
			if rng.IntN(4) == 0 {
				cp = randomCheckpoint(rng).Checkpoints[0] // mostly of another size
			} else {
				// The job's own layout, with damage of its own.
				cp.Held = slices.Clone(cp.Held)
				for r := range cp.Held {
					if rng.IntN(2*cp.Ranks) == 0 {
						cp.Held[r] = Held{Data: Missing, Parity: Missing}
					}
				}
			}
			cp.Name = fmt.Sprintf("c%d", j)
			cp.ID = uint64(1 + rng.IntN(3)) // equal IDs happen: then by name
			if cp.Ranks != in.Ranks || rng.IntN(4) == 0 {
				// Not checked, or of another size: the job verifies only
				// its own, and the plan may ask for it.
				cp.Held = nil
			}
			cp.Manifests = map[string]State{}
			if rng.IntN(5) > 0 {
				cp.Manifests[in.Nodes[rng.IntN(in.Ranks)]] = Intact
			} else if rng.IntN(2) == 0 {
				cp.Manifests[in.Nodes[0]] = Corrupt
			}
			if !cp.inCache() {
				cp.Held = nil
			}
			if rng.IntN(2) == 0 {
				cp.Shared = &Shared{}
				if rng.IntN(2) == 0 {
					cp.Shared.Parts = make([]State, cp.Ranks)
					for r := range cp.Shared.Parts {
						cp.Shared.Parts[r] = []State{Unknown, Intact}[rng.IntN(2)]
						if rng.IntN(4*cp.Ranks) == 0 {
							cp.Shared.Parts[r] = []State{Corrupt, Missing}[rng.IntN(2)]
						}
					}
				}
			}
			if !cp.inCache() && cp.Shared == nil {
				cp.Shared = &Shared{}
			}
			in.Checkpoints = append(in.Checkpoints, cp)
			if cp.inCache() && rng.IntN(8) == 0 {
				in.Failed = append(in.Failed, Failure{cp.Name, cp.ID, Rebuild, "disk full"})
			}
			if cp.Shared != nil && rng.IntN(8) == 0 {
				in.Failed = append(in.Failed, Failure{cp.Name, cp.ID, Fetch, "unreachable"})
			}
		}
		p, err := Decide(in)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		wantAction, wantName, skipped := naiveChoice(in)
		seen[wantAction]++
		var gotSkipped []string
		for _, s := range p.Skipped {
			gotSkipped = append(gotSkipped, s.Name)
		}
		if gotAction := kindOf(p.Action); gotAction != wantAction || p.Name != wantName || !slices.Equal(gotSkipped, skipped) {
			t.Fatalf("case %d: got %s %s skipping %v, want %s %s skipping %v\n%s", i, gotAction, p.Name, gotSkipped, wantAction, wantName, skipped, p)
		}
		// Order independence.
		shuffled := in
		shuffled.Checkpoints = slices.Clone(in.Checkpoints)
		rng.Shuffle(len(shuffled.Checkpoints), func(a, b int) {
			shuffled.Checkpoints[a], shuffled.Checkpoints[b] = shuffled.Checkpoints[b], shuffled.Checkpoints[a]
		})
		if q, _ := Decide(shuffled); !reflect.DeepEqual(p, q) {
			t.Fatalf("case %d: the order of the candidates changed the plan:\n%s\n%s", i, p, q)
		}
	}
	t.Logf("outcomes %v", seen)
	for _, k := range []string{"verify", "cache", "shared", "none"} {
		if seen[k] < 100 {
			t.Errorf("only %d cases end in %s: %v", seen[k], k, seen)
		}
	}
}

func kindOf(a Action) string {
	switch a {
	case UseCache, Rebuild:
		return "cache"
	case Fetch:
		return "shared"
	}
	return a.String()
}

// naiveChoice is rules 1 to 3, 9, 10 and 12 as a reference: the action
// kind ("cache", "shared", "verify", "none"), the candidate, and the names
// of the candidates skipped before it.
func naiveChoice(in Input) (string, string, []string) {
	cs := slices.Clone(in.Checkpoints)
	slices.SortStableFunc(cs, func(a, b Checkpoint) int {
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	failed := func(c Checkpoint, shared bool) bool {
		for _, f := range in.Failed {
			if f.Name == c.Name && f.ID == c.ID && (f.Action == Fetch) == shared {
				return true
			}
		}
		return false
	}
	var skipped []string
	for _, c := range cs {
		if c.Ranks != in.Ranks {
			skipped = append(skipped, c.Name)
			continue
		}
		manifest := false
		for _, st := range c.Manifests {
			manifest = manifest || st == Intact
		}
		if manifest && !failed(c, false) {
			if c.Held == nil {
				return "verify", c.Name, skipped
			}
			ok := true
			for _, set := range c.Sets {
				lost := 0
				for _, r := range set {
					if c.Held[r].Data != Intact || c.Held[r].Parity != Intact {
						lost++
					}
				}
				ok = ok && lost <= c.M
			}
			if ok {
				return "cache", c.Name, skipped
			}
		}
		if c.Shared != nil && !failed(c, true) {
			ok := true
			for _, st := range c.Shared.Parts {
				ok = ok && (st == Intact || st == Unknown)
			}
			if ok {
				return "shared", c.Name, skipped
			}
		}
		skipped = append(skipped, c.Name)
	}
	return "none", "", skipped
}
