package nodeloss

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/redundancy"
)

func scheme(t *testing.T, text string) redundancy.Scheme {
	t.Helper()
	s, err := redundancy.ParseScheme(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkTally holds the counts' arithmetic: every pattern is counted once,
// and every safe fallback under one kind.
func checkTally(t *testing.T, c Counts, patterns int) {
	t.Helper()
	if c.Patterns != patterns || c.Within+c.Beyond+c.Errors != c.Patterns || c.Exact+c.Wrong != c.Within {
		t.Errorf("counts do not add up to %d patterns: %+v", patterns, c)
	}
	sum := 0
	for _, n := range c.Fallback {
		sum += n
	}
	if sum+c.Unsafe != c.Beyond {
		t.Errorf("fallbacks %v and %d unsafe do not add up to %d beyond tolerance", c.Fallback, c.Unsafe, c.Beyond)
	}
	if len(c.Failures) != c.Wrong+c.Unsafe+c.Errors {
		t.Errorf("%d failures listed for %d wrong, %d unsafe, %d errors", len(c.Failures), c.Wrong, c.Unsafe, c.Errors)
	}
}

// The campaign of the suite: every scheme, patterns within and beyond its
// tolerance, every one as the oracle says.
func TestCampaign(t *testing.T) {
	const patterns = 100
	// Each job as small as its scheme allows, to keep the suite fast:
	// the long campaign (docs/RELIABILITY.md) runs larger ones.
	for _, tc := range []struct {
		scheme string
		nodes  int
	}{{"single", 3}, {"partner", 2}, {"xor:3", 3}, {"rs:4+2", 6}} {
		t.Run(tc.scheme, func(t *testing.T) {
			c, err := Run(context.Background(), Config{Scheme: scheme(t, tc.scheme), Nodes: tc.nodes, RanksPerNode: 1, Patterns: patterns, Seed: 1, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			checkTally(t, c, patterns)
			for _, f := range c.Failures {
				t.Errorf("seed %d: %s\nexpected %s, got %s", f.Seed, f.Pattern, f.Expected, f.Got)
			}
			// Neither side may be empty, or the campaign proved nothing
			// about it.
			if c.Within == 0 || c.Beyond == 0 {
				t.Errorf("%d patterns within tolerance and %d beyond: want both", c.Within, c.Beyond)
			}
			t.Logf("%+v", c)
		})
	}
}

// Two ranks per node, caches in directories: a node loss costs a set no
// more than one member still, and the engine's file-backed path holds too.
func TestCampaignDenseOnDisk(t *testing.T) {
	c, err := Run(context.Background(), Config{Scheme: scheme(t, "xor:3"), Nodes: 3, RanksPerNode: 2, Patterns: 8, Seed: 500, Disk: true, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	checkTally(t, c, 8)
	if !c.OK() {
		t.Errorf("failures: %+v", c.Failures)
	}
}

// tamperRank0 flips a byte of rank 0's first file of the restored
// checkpoint in its node's cache, after the restart verified it: a bug
// that hands the application wrong bytes.
func tamperRank0(c *cluster.Cluster, name string) {
	c.Corrupt(0, cachetier.FileObject(name, 0, "f0"))
}

// A planted bug, wrong bytes after a restart, is caught in every pattern
// that restores a checkpoint, within tolerance (Wrong) and beyond (Unsafe),
// and a failing pattern replays alone from its seed.
func TestPlantedWrongBytesCaught(t *testing.T) {
	cfg := Config{Scheme: scheme(t, "xor:3"), Nodes: 3, RanksPerNode: 1, Patterns: 20, Seed: 7, tamper: tamperRank0}
	c, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkTally(t, c, cfg.Patterns)
	if c.Wrong != c.Within || c.Exact != 0 || c.Wrong == 0 {
		t.Errorf("within tolerance: %d exact, %d wrong of %d; want all wrong", c.Exact, c.Wrong, c.Within)
	}
	if c.Unsafe == 0 || c.Fallback[FallbackOlder]+c.Fallback[FallbackShared] != 0 {
		t.Errorf("beyond tolerance: %d unsafe, fallbacks %v; want every restore unsafe", c.Unsafe, c.Fallback)
	}
	if c.OK() || len(c.Failures) == 0 {
		t.Fatal("the campaign reports no failure")
	}
	f := c.Failures[len(c.Failures)/2]
	if !strings.Contains(f.Got, "rank 0") {
		t.Errorf("failure does not name rank 0: %s", f.Got)
	}
	cfg.Seed, cfg.Patterns = f.Seed, 1
	again, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Failures) != 1 || !reflect.DeepEqual(again.Failures[0], f) {
		t.Errorf("replaying seed %d gave %+v, want %+v", f.Seed, again.Failures, f)
	}
}

// A wrong oracle, one that believes XOR survives two losses per set, is
// contradicted by the engine: the campaign reports it.
func TestWrongOracleCaught(t *testing.T) {
	generous := func(s redundancy.Scheme) (int, error) {
		m, err := Tolerance(s)
		return m + 1, err
	}
	c, err := Run(context.Background(), Config{Scheme: scheme(t, "xor:3"), Nodes: 3, RanksPerNode: 1, Patterns: 20, Seed: 1, tolerance: generous})
	if err != nil {
		t.Fatal(err)
	}
	checkTally(t, c, 20)
	if c.Wrong == 0 {
		t.Fatalf("no pattern within the generous tolerance came out wrong: %+v", c)
	}
	for _, f := range c.Failures {
		if !strings.Contains(f.Expected, "rebuild") {
			t.Errorf("seed %d: expected %s; only rebuilds beyond the real tolerance should fail", f.Seed, f.Expected)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, cfg := range []Config{
		{Scheme: scheme(t, "rs:4+2"), Nodes: 4, RanksPerNode: 1},
		{Scheme: scheme(t, "xor:3"), Nodes: 0, RanksPerNode: 1},
		{Scheme: scheme(t, "xor:3"), Nodes: 3, RanksPerNode: 0},
		{Scheme: redundancy.Scheme{Kind: "xor", Data: 2, Parity: 2}, Nodes: 6, RanksPerNode: 1},
		{Scheme: scheme(t, "single"), Nodes: 1, RanksPerNode: 1, Patterns: -1},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%+v): no error", cfg)
		}
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v): no error", cfg)
		}
	}
	if err := (Config{Scheme: scheme(t, "rs:4+2"), Nodes: 6, RanksPerNode: 2}).Validate(); err != nil {
		t.Error(err)
	}
}

// A canceled campaign stops and says so.
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Run(ctx, Config{Scheme: scheme(t, "single"), Nodes: 2, RanksPerNode: 1, Patterns: 5})
	if !errors.Is(err, context.Canceled) || c.Patterns != 0 {
		t.Errorf("Run after cancel: %d patterns, %v", c.Patterns, err)
	}
}

// Generate is a function of its arguments, and its patterns obey their
// rules: corruptions only where there is something to damage.
func TestGenerate(t *testing.T) {
	const nodes, perNode = 4, 1
	sawLost, sawCorrupt := map[int]bool{}, map[Kind]bool{}
	for seed := range int64(300) {
		p, job := Generate(seed, nodes, perNode, seed%2 == 0)
		p2, job2 := Generate(seed, nodes, perNode, seed%2 == 0)
		if !reflect.DeepEqual(p, p2) || !reflect.DeepEqual(job, job2) {
			t.Fatalf("seed %d: two patterns", seed)
		}
		if n := p.Checkpoints(); n < 1 || n > 3 || len(job.Files) != n {
			t.Fatalf("seed %d: %d checkpoints, %d contents", seed, n, len(job.Files))
		}
		for _, parts := range job.Files {
			for r, files := range parts {
				if len(files) == 0 || len(files[0].Data) == 0 {
					t.Fatalf("seed %d: rank %d's first file is empty", seed, r)
				}
			}
		}
		sawLost[len(p.Lost)] = true
		for _, x := range p.Corrupt {
			sawCorrupt[x.Kind] = true
			node := x.Node
			if x.Kind == CacheData || x.Kind == CacheParity {
				node = x.Rank % nodes
			}
			switch x.Kind {
			case SharedData, SharedManifest:
				if !p.Flushed[x.Checkpoint] {
					t.Errorf("seed %d: %s of a checkpoint never flushed", seed, x)
				}
			default:
				if slices.Contains(p.Lost, node) {
					t.Errorf("seed %d: %s on a lost node", seed, x)
				}
			}
			if x.Kind == CacheParity && seed%2 != 0 {
				t.Errorf("seed %d: %s without parity", seed, x)
			}
			if x.Kind == CacheData && len(job.Files[x.Checkpoint][x.Rank][x.File].Data) == 0 {
				t.Errorf("seed %d: %s: the file is empty", seed, x)
			}
			if x.Kind != CacheWiped && x.Mask == 0 {
				t.Errorf("seed %d: %s flips nothing", seed, x)
			}
		}
	}
	for n := range nodes + 1 {
		if !sawLost[n] {
			t.Errorf("no pattern lost %d nodes", n)
		}
	}
	for k := CacheData; k <= CacheWiped; k++ {
		if !sawCorrupt[k] {
			t.Errorf("no pattern damaged %s", k)
		}
	}
}

// The harness ends a pattern on the cluster's fatal error, or any panic,
// with an error, and cleans up either way.
func TestHarnessFatal(t *testing.T) {
	for _, f := range []func(h *harness){
		func(h *harness) { h.Fatalf("waited %d minutes", 3) },
		func(h *harness) { h.Fatal("waited 3 minutes") },
		func(h *harness) { h.Errorf("not provided") },
	} {
		h := &harness{dir: t.TempDir()}
		cleaned := false
		err := h.play(func() error {
			h.Cleanup(func() { cleaned = true })
			h.TempDir()
			f(h)
			return nil
		})
		if err == nil || !cleaned {
			t.Errorf("play: %v, cleaned up %v; want an error and a clean-up", err, cleaned)
		}
	}
}
