package recovery

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// validInput is a job of four ranks on nodes a..d with one XOR checkpoint
// in the caches and on the shared tier, every file intact.
func validInput() Input {
	return Input{
		Ranks: 4,
		Nodes: []string{"a", "b", "c", "d"},
		Checkpoints: []Checkpoint{{
			Name: "ckpt.3", ID: 3, Ranks: 4, Scheme: "xor:2", M: 1,
			Sets:      [][]int{{0, 2}, {1, 3}},
			Nodes:     []string{"a", "b", "c", "d"},
			Manifests: map[string]State{"a": Intact, "b": Intact, "c": Corrupt},
			Held:      []Held{{Data: Intact, Parity: Intact}, {Data: Intact, Parity: Intact}, {Data: Intact, Parity: Intact}, {Data: Intact, Parity: Intact}},
			Shared:    &Shared{Parts: []State{Intact, Unknown, Intact, Intact}},
		}},
		Failed: []Failure{{Name: "ckpt.3", ID: 3, Action: Fetch, Reason: "timeout"}},
	}
}

func TestValidInput(t *testing.T) {
	p, err := Decide(validInput())
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != UseCache || p.Name != "ckpt.3" || len(p.Skipped) != 0 {
		t.Fatalf("plan %s", p)
	}
	if got := strings.Join(p.WriteManifest, " "); got != "c d" {
		t.Errorf("write manifest on %q, want c (corrupt) and d (missing)", got)
	}
}

// TestInvalidInput breaks one rule at a time; each error wraps ErrInvalid
// and names the bad value.
func TestInvalidInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(in *Input)
		want   string
	}{
		{"no ranks", func(in *Input) { in.Ranks, in.Nodes = 0, nil }, "the job has 0 ranks, want at least 1"},
		{"nodes short", func(in *Input) { in.Nodes = in.Nodes[:3] }, "the job has 4 ranks but 3 node names"},
		{"job node empty", func(in *Input) { in.Nodes[2] = "" }, "rank 2 of the job runs on no node"},
		{"no name", func(in *Input) { in.Checkpoints[0].Name = "" }, "a checkpoint (id 3) has no name"},
		{"id 0", func(in *Input) { in.Checkpoints[0].ID = 0 }, "checkpoint ckpt.3 has id 0"},
		{"no ranks in checkpoint", func(in *Input) { in.Checkpoints[0].Ranks = 0 }, "checkpoint ckpt.3 (id 3) has 0 ranks"},
		{"negative m", func(in *Input) { in.Checkpoints[0].M = -1 }, "xor:2 tolerates -1 lost members"},
		{"old nodes short", func(in *Input) { in.Checkpoints[0].Nodes = []string{"a"} }, "has 4 ranks but 1 node names"},
		{"old node empty", func(in *Input) { in.Checkpoints[0].Nodes[3] = "" }, "rank 3 was on no node"},
		{"no sets", func(in *Input) { in.Checkpoints[0].Sets = nil }, "has no redundancy sets"},
		{"set too small", func(in *Input) { in.Checkpoints[0].Sets = [][]int{{0, 2}, {1}, {3}} }, "set 1 has 1 members, xor:2 needs more than 1"},
		{"rank out of range", func(in *Input) { in.Checkpoints[0].Sets[1] = []int{1, 4} }, "set 1 holds rank 4, out of range [0, 4)"},
		{"negative rank", func(in *Input) { in.Checkpoints[0].Sets[0] = []int{-1, 2} }, "set 0 holds rank -1, out of range [0, 4)"},
		{"rank twice in a set", func(in *Input) { in.Checkpoints[0].Sets[1] = []int{1, 3, 3} }, "set 1 lists rank 3 twice"},
		{"rank in two sets", func(in *Input) { in.Checkpoints[0].Sets[1] = []int{1, 3, 2} }, "rank 2 is in sets 0 and 1"},
		{"rank of an earlier set", func(in *Input) { in.Checkpoints[0].Sets[1] = []int{1, 0} }, "rank 0 is in sets 0 and 1"},
		{"rank missing", func(in *Input) {
			in.Checkpoints[0].M = 0
			in.Checkpoints[0].Sets[1] = []int{1}
		}, "rank 3 is in no set"},
		{"manifest on a foreign node", func(in *Input) { in.Checkpoints[0].Manifests["x"] = Intact }, `manifest state reported for node "x", which runs no rank of the job`},
		{"manifest unknown", func(in *Input) { in.Checkpoints[0].Manifests["d"] = Unknown }, "manifest on node d is unknown"},
		{"held short", func(in *Input) { in.Checkpoints[0].Held = in.Checkpoints[0].Held[:2] }, "has 4 ranks but holdings for 2"},
		{"held unknown", func(in *Input) { in.Checkpoints[0].Held[1].Parity = Unknown }, "rank 1's parity is unknown"},
		{"held bad state", func(in *Input) { in.Checkpoints[0].Held[2].Data = State(9) }, "rank 2's data is State(9)"},
		{"held for another size", func(in *Input) {
			c := &in.Checkpoints[0]
			c.Ranks, c.Nodes, c.Sets, c.Shared.Parts = 2, c.Nodes[:2], [][]int{{0, 1}}, nil
		}, "written by 2 ranks, but holdings are reported for it by a job of 4"},
		{"held without manifest", func(in *Input) {
			in.Checkpoints[0].Manifests = nil
			in.Failed = nil
		}, "holdings are reported, but no node's cache holds its manifest"},
		{"shared parts short", func(in *Input) { in.Checkpoints[0].Shared.Parts = []State{Intact} }, "has 4 ranks but 1 shared-tier parts"},
		{"shared part bad state", func(in *Input) { in.Checkpoints[0].Shared.Parts[3] = State(7) }, "shared-tier part of rank 3 is State(7)"},
		{"listed twice", func(in *Input) { in.Checkpoints = append(in.Checkpoints, in.Checkpoints[0]) }, "checkpoint ckpt.3 (id 3) is listed twice"},
		{"failure of no candidate", func(in *Input) { in.Failed[0].ID = 4 }, "a failed attempt names checkpoint ckpt.3 (id 4), which is not a candidate"},
		{"failure action", func(in *Input) { in.Failed[0].Action = Verify }, "has action verify"},
		{"failed fetch, no shared copy", func(in *Input) { in.Checkpoints[0].Shared = nil }, "a failed fetch of checkpoint ckpt.3 (id 3), which is not on the shared tier"},
		{"failed rebuild, not cached", func(in *Input) {
			in.Checkpoints[0].Manifests, in.Checkpoints[0].Held = nil, nil
			in.Failed[0].Action = Rebuild
		}, "a failed rebuild of checkpoint ckpt.3 (id 3), which no node's cache holds"},
		{"failure without reason", func(in *Input) { in.Failed[0].Reason = "" }, "a failed fetch of checkpoint ckpt.3 (id 3) gives no reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := validInput()
			tc.break_(&in)
			_, err := Decide(in)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Unknown.String() + " " + Intact.String() + " " + Corrupt.String() + " " + Missing.String() + " " + State(8).String(),
			"unknown intact corrupt missing State(8)"},
		{None.String() + " " + Verify.String() + " " + UseCache.String() + " " + Rebuild.String() + " " + Fetch.String() + " " + Action(9).String(),
			"none verify use-cache rebuild fetch Action(9)"},
		{Plan{}.Why(), "no checkpoint in any node's cache or on the shared tier"},
		{Plan{}.String(), "none: no checkpoint in any node's cache or on the shared tier\n"},
		{Plan{Action: None, Skipped: []Skip{{"a", 2, "x"}, {"b", 1, "y"}}}.Why(), "a: x; b: y"},
		{Plan{Action: Fetch}.Why(), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestLostMembers(t *testing.T) {
	in := validInput()
	c := &in.Checkpoints[0]
	c.Sets = [][]int{{0, 2}, {3, 1}}
	c.Held[1] = Held{Data: Corrupt, Parity: Intact}
	p, err := Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != Rebuild {
		t.Fatalf("plan %s", p)
	}
	if got := p.LostMembers(1); len(got) != 1 || got[0] != 1 {
		t.Errorf("set 1 lost members %v, want [1] (rank 1 is member 1 of [3 1])", got)
	}
	if got := p.LostMembers(0); got != nil {
		t.Errorf("set 0 lost members %v, want none", got)
	}
}

// TestDecideNeverPanics breaks random valid inputs in random ways: Decide
// returns an error or a plan, never panics (validation guards every index
// the rules use).
func TestDecideNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	errs := 0
	for i := range 3000 {
		in := randomCheckpoint(rng)
		c := &in.Checkpoints[0]
		if rng.IntN(2) == 0 {
			c.Shared = &Shared{Parts: make([]State, c.Ranks)}
		}
		for range 1 + rng.IntN(2) {
			switch rng.IntN(9) {
			case 0:
				if len(c.Sets) == 0 {
					break
				}
				s := c.Sets[rng.IntN(len(c.Sets))]
				s[rng.IntN(len(s))] = rng.IntN(c.Ranks+2) - 1
			case 1:
				c.Held = c.Held[:rng.IntN(len(c.Held)+1)]
			case 2:
				in.Nodes = in.Nodes[:rng.IntN(len(in.Nodes)+1)]
			case 3:
				c.Nodes = c.Nodes[:rng.IntN(len(c.Nodes)+1)]
			case 4:
				c.Ranks += rng.IntN(3) - 1
			case 5:
				in.Ranks += rng.IntN(3) - 1
			case 6:
				if c.Shared == nil {
					break
				}
				c.Shared.Parts = c.Shared.Parts[:rng.IntN(len(c.Shared.Parts)+1)]
			case 7:
				c.M = rng.IntN(4) - 1
			case 8:
				c.Sets = c.Sets[:rng.IntN(len(c.Sets)+1)]
			}
		}
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("case %d: panic %v on %+v", i, v, in)
				}
			}()
			if _, err := Decide(in); err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("case %d: error %v does not wrap ErrInvalid", i, err)
				}
				errs++
			}
		}()
	}
	if errs < 1000 {
		t.Errorf("only %d of 3000 broken inputs were refused", errs)
	}
}

// A Fetch says why the caches could not give the checkpoint back, as the
// skip reason would; other plans leave CacheWhy empty.
func TestCacheWhy(t *testing.T) {
	in := validInput()
	in.Failed = nil
	if p, _ := Decide(in); p.Action != UseCache || p.CacheWhy != "" {
		t.Fatalf("intact: plan %s, CacheWhy %q", p, p.CacheWhy)
	}
	c := &in.Checkpoints[0]
	c.Held[0] = Held{Data: Missing, Parity: Missing}
	c.Held[2] = Held{Data: Intact, Parity: Corrupt}
	c.Shared.Parts = nil
	p, err := Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "set 0 (ranks [0 2]) lost ranks [0 2], xor:2 rebuilds at most 1 per set (rank 0 on a: data and parity missing; rank 2 on c: parity corrupt)"
	if p.Action != Fetch || p.CacheWhy != want {
		t.Errorf("plan %v, CacheWhy %q; want fetch, %q", p.Action, p.CacheWhy, want)
	}
	// Without the shared copy the same words are the skip reason's first.
	c.Shared = nil
	if p, _ := Decide(in); p.Action != None || !strings.HasPrefix(p.Skipped[0].Reason, want+"; ") {
		t.Errorf("no shared copy: plan %v, skipped %+v", p.Action, p.Skipped)
	}
	in.Checkpoints[0].Manifests = nil
	in.Checkpoints[0].Held = nil
	in.Checkpoints[0].Shared = &Shared{}
	if p, _ := Decide(in); p.Action != Fetch || p.CacheWhy != "no node's cache holds its manifest" {
		t.Errorf("in no cache: plan %v, CacheWhy %q", p.Action, p.CacheWhy)
	}
}
