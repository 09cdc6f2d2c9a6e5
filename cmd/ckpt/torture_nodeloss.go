package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/torture/nodeloss"
)

const tortureNodeLossLong = `Plays randomized node-loss and corruption patterns against ckpt's engine, in
this process, and checks every outcome against an oracle written from the
redundancy schemes' definitions. Each pattern, drawn from its own seed: a job
of --nodes × --ranks-per-node ranks commits one to three checkpoints of random
content, flushes some to a shared tier, loses a random subset of nodes (their
ranks restart on spares with empty caches), may have bytes of surviving
caches' data, parity or manifests, or of the shared tier, flipped, and
restarts. Within the scheme's tolerance per redundancy set (SINGLE 0,
PARTNER and XOR 1, RS K+M M lost members) the newest checkpoint must come
back bit-exactly from the caches; beyond it the newest checkpoint still
recoverable must (an older one in the caches, the shared copy), or none.

A table per scheme on stdout: patterns within tolerance (exact / wrong) and
beyond it (safe fallbacks by kind / unsafe), and errors; then each failing
pattern with its seed: --seed SEED --patterns 1 replays it alone.

Exit status: 0 when every pattern came out as expected; 1 otherwise; 2 for
bad input.`

const tortureNodeLossExample = `  ckpt torture nodeloss --scheme all --patterns 1000 --nodes 6
  ckpt torture nodeloss --scheme rs:4+2 --patterns 200 --seed 42 --json
  # replay one failing pattern
  ckpt torture nodeloss --scheme xor:4 --seed 1234 --patterns 1`

// tortureAllSchemes are the schemes of --scheme all.
var tortureAllSchemes = []string{"single", "partner", "xor:4", "rs:4+2"}

// tortureProgressEvery is how often a campaign reports its progress on
// stderr; campaigns shorter than that print nothing there.
var tortureProgressEvery = 2 * time.Second

// tortureNodeLossFlags are the flags of 'ckpt torture nodeloss'.
type tortureNodeLossFlags struct {
	scheme                                 *string
	patterns, nodes, ranksPerNode, workers *int
	seed                                   *int64
	disk, asJSON                           *bool
}

func newTortureNodeLossCmd() *cobra.Command {
	c := leaf("nodeloss [--scheme single|partner|xor:N|rs:K+M|all] [--patterns N] [--nodes M] [--seed S] [--json]",
		"Randomized node losses and corruptions per redundancy scheme, checked against an oracle", tortureNodeLossLong, tortureNodeLossExample)
	fs := c.Flags()
	f := &tortureNodeLossFlags{
		scheme:       fs.String("scheme", "all", "redundancy: single, partner, xor:S, rs:K+M, or all ("+strings.Join(tortureAllSchemes, ", ")+")"),
		patterns:     fs.Int("patterns", 1000, "patterns per scheme"),
		nodes:        fs.Int("nodes", 6, "nodes of the job (at least a set's size)"),
		ranksPerNode: fs.Int("ranks-per-node", 2, "ranks on each node"),
		workers:      fs.Int("workers", 2, "patterns played at once; the outcomes do not depend on it"),
		seed:         fs.Int64("seed", 1, "seed of the first pattern; pattern i has seed SEED+i"),
		disk:         fs.Bool("disk", false, "keep the caches and the shared tier in temp directories instead of memory"),
	}
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// tortureResult is one scheme's campaign.
type tortureResult struct {
	cfg     nodeloss.Config
	counts  nodeloss.Counts
	elapsed time.Duration
}

func (f *tortureNodeLossFlags) run(c *cobra.Command) error {
	names := []string{*f.scheme}
	if strings.EqualFold(strings.TrimSpace(*f.scheme), "all") {
		names = tortureAllSchemes
	}
	if *f.patterns < 1 {
		return usagef("--patterns %d: need at least 1", *f.patterns)
	}
	if *f.workers < 1 {
		return usagef("--workers %d: need at least 1", *f.workers)
	}
	var cfgs []nodeloss.Config
	for _, name := range names {
		s, err := redundancy.ParseScheme(name)
		if err != nil {
			return usagef("--scheme: %v", err)
		}
		cfg := nodeloss.Config{Scheme: s, Nodes: *f.nodes, RanksPerNode: *f.ranksPerNode, Patterns: *f.patterns,
			Seed: *f.seed, Workers: *f.workers, Disk: *f.disk}
		if err := cfg.Validate(); err != nil {
			return usagef("--scheme %s, --nodes %d, --ranks-per-node %d: %v", s, *f.nodes, *f.ranksPerNode, err)
		}
		cfgs = append(cfgs, cfg)
	}
	stderr := c.ErrOrStderr()
	var results []tortureResult
	for _, cfg := range cfgs {
		start := time.Now()
		last := start
		cfg.Progress = func(n nodeloss.Counts) {
			if now := time.Now(); now.Sub(last) >= tortureProgressEvery {
				last = now
				fmt.Fprintf(stderr, "ckpt torture nodeloss: %s: %d/%d patterns, %d failing, %.0fs\n",
					cfg.Scheme, n.Patterns, cfg.Patterns, len(n.Failures), now.Sub(start).Seconds())
			}
		}
		counts, err := nodeloss.Run(c.Context(), cfg)
		if err != nil {
			return err
		}
		results = append(results, tortureResult{cfg, counts, time.Since(start)})
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		if err := writeTortureJSON(w, *f.seed, results); err != nil {
			return err
		}
	} else {
		writeTortureTables(w, results)
	}
	return tortureVerdict(results)
}

// tortureVerdict fails when any pattern came out wrong, unsafe or in
// error (the report printed says which).
func tortureVerdict(results []tortureResult) error {
	failing, total := 0, 0
	for _, r := range results {
		failing += len(r.counts.Failures)
		total += r.counts.Patterns
	}
	if failing > 0 {
		return fmt.Errorf("torture nodeloss: %d of %d patterns came out wrong, unsafe or in error", failing, total)
	}
	return nil
}

// replay is the command line that plays one failing pattern alone.
func replay(cfg nodeloss.Config, seed int64) string {
	disk := ""
	if cfg.Disk {
		disk = " --disk"
	}
	return fmt.Sprintf("ckpt torture nodeloss --scheme %s --nodes %d --ranks-per-node %d%s --seed %d --patterns 1",
		cfg.Scheme, cfg.Nodes, cfg.RanksPerNode, disk, seed)
}

// writeTortureTables writes a table per scheme, then its failures.
func writeTortureTables(w io.Writer, results []tortureResult) {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		n := r.counts
		fmt.Fprintf(w, "%s: %d nodes × %d ranks, seeds %d to %d, %.1fs\n", r.cfg.Scheme, r.cfg.Nodes, r.cfg.RanksPerNode,
			r.cfg.Seed, r.cfg.Seed+int64(r.cfg.Patterns)-1, r.elapsed.Seconds())
		t := newTable(w)
		t.row("PATTERNS", "WITHIN", "EXACT", "WRONG", "BEYOND", "OLDER", "SHARED", "SCRATCH", "UNSAFE", "ERRORS")
		t.row(fmt.Sprint(n.Patterns), fmt.Sprint(n.Within), fmt.Sprint(n.Exact), fmt.Sprint(n.Wrong), fmt.Sprint(n.Beyond),
			fmt.Sprint(n.Fallback[nodeloss.FallbackOlder]), fmt.Sprint(n.Fallback[nodeloss.FallbackShared]),
			fmt.Sprint(n.Fallback[nodeloss.FallbackScratch]), fmt.Sprint(n.Unsafe), fmt.Sprint(n.Errors))
		t.flush()
		for _, f := range n.Failures {
			fmt.Fprintf(w, "FAIL %s\n  expected %s, got %s\n  replay: %s\n", f.Pattern, f.Expected, f.Got, replay(r.cfg, f.Seed))
		}
	}
}

// writeTortureJSON writes the campaigns as one JSON object.
func writeTortureJSON(w io.Writer, seed int64, results []tortureResult) error {
	schemes := []object{}
	ok := true
	for _, r := range results {
		n := r.counts
		failures := []object{}
		for _, f := range n.Failures {
			failures = append(failures, object{{"seed", f.Seed}, {"pattern", f.Pattern}, {"expected", f.Expected},
				{"got", f.Got}, {"replay", replay(r.cfg, f.Seed)}})
		}
		ok = ok && n.OK()
		schemes = append(schemes, object{{"scheme", r.cfg.Scheme.String()}, {"nodes", r.cfg.Nodes},
			{"ranks_per_node", r.cfg.RanksPerNode}, {"patterns", n.Patterns},
			{"within", n.Within}, {"exact", n.Exact}, {"wrong", n.Wrong},
			{"beyond", n.Beyond}, {"fallback", object{{"older", n.Fallback[nodeloss.FallbackOlder]},
				{"shared", n.Fallback[nodeloss.FallbackShared]}, {"scratch", n.Fallback[nodeloss.FallbackScratch]}}},
			{"unsafe", n.Unsafe}, {"errors", n.Errors}, {"seconds", r.elapsed.Seconds()}, {"failures", failures}})
	}
	return writeJSON(w, object{{"seed", seed}, {"ok", ok}, {"schemes", schemes}})
}
