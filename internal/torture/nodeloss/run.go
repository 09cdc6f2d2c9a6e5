package nodeloss

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// Config is one campaign: patterns of one scheme on one layout.
type Config struct {
	Scheme              redundancy.Scheme
	Nodes, RanksPerNode int
	Patterns            int
	Seed                int64 // pattern i has seed Seed+i
	// Disk keeps the caches and the shared tier in directories under
	// TempDir (the OS's temp directory if empty) instead of memory.
	Disk    bool
	TempDir string
	// Workers is how many patterns are played at once (at least 1).
	Workers int
	// Progress, if set, is called after each pattern with the counts so
	// far, from one worker at a time (never concurrently).
	Progress func(Counts)

	// tamper, if set, runs between the restart and the reading of the
	// restored files: the tests plant a bug with it.
	tamper func(c *cluster.Cluster, restored string)
	// tolerance, if set, replaces Tolerance: the tests give the oracle a
	// wrong rule with it.
	tolerance func(redundancy.Scheme) (int, error)
}

// Fallback kinds: where a restart beyond tolerance safely went.
const (
	FallbackOlder   = "older"   // an older checkpoint from the caches
	FallbackShared  = "shared"  // the shared tier's copy (of the newest or an older one)
	FallbackScratch = "scratch" // none: a start from scratch
)

// Counts is a campaign's tally.
type Counts struct {
	Patterns int
	// Within tolerance: the newest checkpoint restored bit-exactly as the
	// oracle says (Exact) or not (Wrong).
	Within, Exact, Wrong int
	// Beyond tolerance: a safe fallback, by kind (Fallback*), or not.
	Beyond   int
	Fallback map[string]int
	Unsafe   int
	// Errors are patterns the campaign could not play to their restart
	// (a commit or flush that failed before any fault).
	Errors int
	// Failures are the patterns counted in Wrong, Unsafe or Errors.
	Failures []Failure
}

// Failure is a pattern whose outcome was not the expected one.
type Failure struct {
	Seed     int64
	Pattern  string
	Expected string
	Got      string
}

// OK reports whether every pattern came out as expected.
func (c Counts) OK() bool { return c.Wrong == 0 && c.Unsafe == 0 && c.Errors == 0 }

// Run plays cfg.Patterns patterns and counts their outcomes. It returns an
// error only for a configuration it cannot play (or ctx's); what went
// wrong in a pattern is in the counts.
func Run(ctx context.Context, cfg Config) (Counts, error) {
	counts := Counts{Fallback: map[string]int{FallbackOlder: 0, FallbackShared: 0, FallbackScratch: 0}}
	if err := cfg.Validate(); err != nil {
		return counts, err
	}
	tol := Tolerance
	if cfg.tolerance != nil {
		tol = cfg.tolerance
	}
	tolerance, err := tol(cfg.Scheme)
	if err != nil {
		return counts, err
	}
	layout, err := layoutOf(cfg)
	if err != nil {
		return counts, err
	}
	workers := min(max(cfg.Workers, 1), max(cfg.Patterns, 1))
	seeds := make(chan int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for seed := range seeds {
				p, job := Generate(seed, cfg.Nodes, cfg.RanksPerNode, cfg.Scheme.Parity > 0)
				want := Expect(layout, tolerance, p)
				got, err := play(cfg, layout, p, job)
				mu.Lock()
				counts.add(p, want, got, err)
				if cfg.Progress != nil {
					cfg.Progress(counts)
				}
				mu.Unlock()
			}
		})
	}
	for i := range cfg.Patterns {
		if err = ctx.Err(); err != nil {
			break
		}
		seeds <- cfg.Seed + int64(i)
	}
	close(seeds)
	wg.Wait()
	slices.SortFunc(counts.Failures, func(a, b Failure) int { return cmp.Compare(a.Seed, b.Seed) })
	return counts, err
}

// Validate reports whether cfg can be played: a valid scheme with a
// tolerance rule, and a layout on which placement can form its sets.
func (cfg Config) Validate() error {
	if err := cfg.Scheme.Validate(); err != nil {
		return err
	}
	if _, err := Tolerance(cfg.Scheme); err != nil {
		return err
	}
	if cfg.Nodes < 1 || cfg.RanksPerNode < 1 {
		return fmt.Errorf("nodeloss: need at least one node and one rank per node, have %d nodes and %d ranks per node", cfg.Nodes, cfg.RanksPerNode)
	}
	if cfg.Patterns < 0 {
		return fmt.Errorf("nodeloss: %d patterns", cfg.Patterns)
	}
	_, err := layoutOf(cfg)
	return err
}

// layoutOf is the layout the engine's sets must have: rank r on node slot
// r % Nodes, sets as placement forms them.
func layoutOf(cfg Config) (Layout, error) {
	ranks := cfg.Nodes * cfg.RanksPerNode
	l := Layout{Nodes: cfg.Nodes, Node: make([]int, ranks)}
	members := make([]placement.Member, ranks)
	for r := range ranks {
		l.Node[r] = r % cfg.Nodes
		members[r] = placement.Member{Rank: r, Node: nodeName(r % cfg.Nodes)}
	}
	sets, err := placement.FormSets(members, cfg.Scheme.SetSize())
	if err != nil {
		return l, fmt.Errorf("nodeloss: %s on %d nodes × %d ranks: %w", cfg.Scheme, cfg.Nodes, cfg.RanksPerNode, err)
	}
	l.Sets = sets
	return l, nil
}

// nodeName is the cluster's name of node slot n's first host.
func nodeName(n int) string { return fmt.Sprintf("node%d", n) }

// outcome is what a restart did, as every rank agreed.
type outcome struct {
	Checkpoint int // -1 for none
	Source     Source
	// Problem, if not empty, is why the restart was neither a restore of
	// the right bytes agreed by every rank nor an agreed start from
	// scratch.
	Problem string
}

func (o outcome) String() string {
	if o.Problem != "" {
		return o.Problem
	}
	return Expectation{Checkpoint: o.Checkpoint, Source: o.Source}.String()
}

// add counts one pattern.
func (c *Counts) add(p Pattern, want Expectation, got outcome, err error) {
	c.Patterns++
	fail := func(what string) {
		c.Failures = append(c.Failures, Failure{Seed: p.Seed, Pattern: p.String(), Expected: want.String(), Got: what})
	}
	right := got.Problem == "" && got.Checkpoint == want.Checkpoint && got.Source == want.Source
	switch {
	case err != nil:
		c.Errors++
		fail("error: " + err.Error())
	case want.Within:
		c.Within++
		if right {
			c.Exact++
		} else {
			c.Wrong++
			fail(got.String())
		}
	default:
		c.Beyond++
		if !right {
			c.Unsafe++
			fail(got.String())
			return
		}
		switch {
		case want.Source == FromScratch:
			c.Fallback[FallbackScratch]++
		case want.Source == FromShared:
			c.Fallback[FallbackShared]++
		default:
			c.Fallback[FallbackOlder]++
		}
	}
}

// play plays one pattern on a fresh cluster: the job commits and flushes,
// the faults happen, every rank restarts and reads back what it got. err
// is for a pattern that could not be played up to its restart.
func play(cfg Config, l Layout, p Pattern, job Job) (got outcome, err error) {
	h := &harness{dir: cfg.TempDir}
	restarting := false
	if cfg.Disk && h.dir == "" {
		h.dir = os.TempDir()
	}
	err = h.play(func() error {
		c := cluster.New(h, cluster.Config{Ranks: job.Ranks(), Nodes: job.Nodes, Scheme: cfg.Scheme.String(),
			Shared: true, Mem: !cfg.Disk, NoSync: true})
		if err := commit(c, l, p, job); err != nil {
			return err
		}
		for _, n := range p.Lost {
			c.LoseNode(n)
		}
		c.Relaunch()
		for _, x := range p.Corrupt {
			if err := corrupt(c, x, job); err != nil {
				return err
			}
		}
		restarting = true
		got = restart(c, cfg.tamper, job)
		restarting = false
		return nil
	})
	if err != nil && restarting {
		// The restart itself gave up (its ranks did not end within
		// testwait.Bound: a hang): that is its outcome, not the
		// harness's error.
		return outcome{Problem: fmt.Sprintf("the restart did not end: %v", err)}, nil
	}
	return got, err
}

// commit has the job commit its checkpoints, flushing those p says, and
// checks that the engine formed the sets the oracle uses.
func commit(c *cluster.Cluster, l Layout, p Pattern, job Job) error {
	for i := range job.Files {
		name := CheckpointName(i)
		if err := all(c.Run(func(ctx context.Context, r *cluster.Rank) error {
			return write(ctx, r, name, job.Files[i][r.ID])
		})); err != nil {
			return fmt.Errorf("commit %s: %w", name, err)
		}
		if !p.Flushed[i] {
			continue
		}
		if err := all(c.Run(func(ctx context.Context, r *cluster.Rank) error { return r.Engine.Flush(ctx, name) })); err != nil {
			return fmt.Errorf("flush %s: %w", name, err)
		}
	}
	m, err := cachetier.Load(context.Background(), c.Cache(0), CheckpointName(0))
	if err != nil {
		return err
	}
	if !slices.EqualFunc(m.Sets, l.Sets, slices.Equal) {
		return fmt.Errorf("the engine formed sets %v, the oracle assumes %v", m.Sets, l.Sets)
	}
	return nil
}

// all is the first of errs that is not nil.
func all(errs []error) error {
	for r, err := range errs {
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// write is a rank's step that checkpoints files as checkpoint name.
func write(ctx context.Context, r *cluster.Rank, name string, files []File) error {
	ck, err := r.Engine.Start(name)
	if err != nil {
		return err
	}
	for _, f := range files {
		w, err := ck.Create(f.Name)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.Data); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return ck.Commit(ctx)
}

// corrupt flips the byte x says in the object it names.
func corrupt(c *cluster.Cluster, x Corruption, job Job) error {
	name := CheckpointName(x.Checkpoint)
	var b storage.Backend
	var object string
	switch x.Kind {
	case CacheData:
		b, object = c.Cache(x.Rank%job.Nodes), cachetier.FileObject(name, x.Rank, job.Files[x.Checkpoint][x.Rank][x.File].Name)
	case CacheParity:
		b, object = c.Cache(x.Rank%job.Nodes), cachetier.ParityObject(name, x.Rank)
	case CacheManifest:
		b, object = c.Cache(x.Node), cachetier.ManifestObject(name)
	case SharedData:
		b, object = c.Shared(), sharedtier.DataObject(name, x.Rank)
	case SharedManifest:
		b, object = c.Shared(), sharedtier.ManifestObject(name)
	case CacheWiped:
		return wipe(c.Cache(x.Node), name)
	default:
		return fmt.Errorf("corrupt: unknown kind %v", x.Kind)
	}
	ctx := context.Background()
	data, err := storage.Load(ctx, b, object)
	if err != nil {
		return fmt.Errorf("corrupt %s: %w", x, err)
	}
	if len(data) == 0 {
		return fmt.Errorf("corrupt %s: %s is empty", x, object)
	}
	data[int(x.Pos)%len(data)] ^= x.Mask
	if _, err := storage.Save(ctx, b, object, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("corrupt %s: %w", x, err)
	}
	return nil
}

// wipe removes a node's copy of checkpoint name.
func wipe(b storage.Backend, name string) error {
	ctx := context.Background()
	var objects []string
	if err := b.List(ctx, name+"/", func(i storage.Info) error { objects = append(objects, i.Name); return nil }); err != nil {
		return fmt.Errorf("wipe %s: %w", name, err)
	}
	if len(objects) == 0 {
		return fmt.Errorf("wipe %s: the node holds nothing of it", name)
	}
	for _, o := range objects {
		if err := b.Remove(ctx, o); err != nil {
			return fmt.Errorf("wipe %s: %w", name, err)
		}
	}
	return nil
}

// restart has every rank restart, then reads every rank's restored files
// through the engine and compares them with what the job wrote. A restore
// counts only if every rank restored the same checkpoint from the same
// source, with exactly the files and bytes written; a start from scratch
// only if every rank found no checkpoint.
func restart(c *cluster.Cluster, tamper func(*cluster.Cluster, string), job Job) (got outcome) {
	ranks := c.Ranks()
	restored := make([]*engine.Restored, len(ranks))
	errs := c.Run(func(ctx context.Context, r *cluster.Rank) error {
		res, err := r.Engine.Restart(ctx)
		restored[r.ID] = res
		return err
	})
	scratch := 0
	for r, err := range errs {
		switch {
		case errors.Is(err, engine.ErrNoCheckpoint):
			scratch++
		case err != nil:
			return outcome{Problem: fmt.Sprintf("rank %d failed: %v", r, err)}
		}
	}
	switch {
	case scratch == len(ranks):
		return outcome{Checkpoint: -1, Source: FromScratch}
	case scratch > 0:
		return outcome{Problem: fmt.Sprintf("%d of %d ranks found no checkpoint, the others restored one", scratch, len(ranks))}
	}
	name, source := restored[0].Name(), restored[0].Source
	for r, res := range restored {
		if res.Name() != name || res.Source != source {
			return outcome{Problem: fmt.Sprintf("rank 0 restored %s from %s, rank %d %s from %s", name, source, r, res.Name(), res.Source)}
		}
	}
	ck := -1
	for i := range job.Files {
		if CheckpointName(i) == name {
			ck = i
		}
	}
	if ck < 0 {
		return outcome{Problem: fmt.Sprintf("restored %q, which the job never committed", name)}
	}
	got = outcome{Checkpoint: ck}
	switch source {
	case engine.SourceCache:
		got.Source = FromCache
	case engine.SourceRebuild:
		got.Source = FromRebuild
	case engine.SourceShared:
		got.Source = FromShared
	default:
		return outcome{Problem: fmt.Sprintf("restored %s from an unknown source %q", name, source)}
	}
	if tamper != nil {
		tamper(c, name)
	}
	for r, res := range restored {
		if err := sameFiles(res, job.Files[ck][r]); err != nil {
			return outcome{Problem: fmt.Sprintf("%s from %s, but rank %d: %v", name, source, r, err)}
		}
	}
	return got
}

// sameFiles checks that a rank's restored checkpoint has exactly the files
// written, with the same bytes.
func sameFiles(res *engine.Restored, want []File) error {
	var names []string
	for _, f := range want {
		names = append(names, f.Name)
	}
	if have := res.Files(); !slices.Equal(have, names) {
		return fmt.Errorf("files %v, wrote %v", have, names)
	}
	for _, f := range want {
		rc, err := res.Open(f.Name)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if !bytes.Equal(data, f.Data) {
			return fmt.Errorf("%s: the restored bytes differ from those written", f.Name)
		}
	}
	return nil
}
