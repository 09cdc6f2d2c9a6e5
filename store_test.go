package ckpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// testJob is a job of Stores on the ranks of an in-process cluster
// (internal/cluster): 8 ranks on 4 nodes and the like, each node with its
// cache directory.
type testJob struct {
	t      *testing.T
	c      *cluster.Cluster
	nodes  int
	scheme string
	stores []*Store
}

func newTestJob(t *testing.T, ranks, nodes int, scheme string) *testJob {
	t.Helper()
	return openTestJob(t, cluster.Config{Ranks: ranks, Nodes: nodes, Scheme: scheme, Shared: true})
}

// openTestJob is newTestJob with the cluster's configuration in full.
func openTestJob(t *testing.T, cfg cluster.Config) *testJob {
	t.Helper()
	j := &testJob{t: t, c: cluster.New(t, cfg), nodes: cfg.Nodes, scheme: cfg.Scheme}
	j.open()
	return j
}

// nodeOf is the node of rank r: the cluster fills nodes round-robin.
func (j *testJob) nodeOf(r int) int { return r % j.nodes }

// open opens a Store for every rank of the cluster's incarnation, as the
// ranks of a launched job do.
func (j *testJob) open() {
	j.t.Helper()
	ranks := j.c.Ranks()
	j.stores = make([]*Store, len(ranks))
	for _, r := range ranks {
		s, err := Open(Options{Rank: r.ID, Size: len(ranks), Node: r.NodeName,
			Cache: r.Cache, Redundancy: j.scheme, Comm: &localComm{r.Comm}, BlockSize: 4096})
		if err != nil {
			j.t.Fatal(err)
		}
		j.stores[r.ID] = s
	}
}

// relaunch opens fresh stores for every rank, as a restarted job would.
func (j *testJob) relaunch() {
	j.t.Helper()
	j.c.Relaunch()
	j.open()
}

// run runs fn on every rank concurrently and returns the errors by rank.
func (j *testJob) run(fn func(r int, s *Store) error) []error {
	j.t.Helper()
	return j.c.Run(func(ctx context.Context, r *cluster.Rank) error { return fn(r.ID, j.stores[r.ID]) })
}

func (j *testJob) mustRun(fn func(r int, s *Store) error) {
	j.t.Helper()
	for r, err := range j.run(fn) {
		if err != nil {
			j.t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// loseNode crashes a node: its cache is gone, and a spare takes its place
// at the next relaunch.
func (j *testJob) loseNode(n int) { j.c.LoseNode(n) }

// content is the deterministic data rank r writes to file f of checkpoint c:
// sizes differ between ranks and files, some are empty.
func content(c string, r, f int) []byte {
	rng := rand.New(rand.NewPCG(uint64(r*131+f), uint64(len(c))))
	n := (r*7919 + f*104729) % 50000
	if (r+f)%5 == 4 {
		n = 0
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

const filesPerRank = 3

func writeCheckpoint(ctx context.Context, s *Store, name string) error {
	c, err := s.Start(name)
	if err != nil {
		return err
	}
	for f := 0; f < filesPerRank; f++ {
		w, err := c.Create(fmt.Sprintf("f%d.bin", f))
		if err != nil {
			return err
		}
		data := content(name, s.Rank(), f)
		for len(data) > 0 { // odd-sized writes
			n := min(len(data), 777)
			if _, err := w.Write(data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return c.Commit(ctx)
}

func checkRestored(ctx context.Context, s *Store, res *Restored, name string) error {
	if res.Name() != name {
		return fmt.Errorf("restored %q, want %q", res.Name(), name)
	}
	for f := 0; f < filesPerRank; f++ {
		r, err := res.Open(fmt.Sprintf("f%d.bin", f))
		if err != nil {
			return err
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if !bytes.Equal(got, content(name, s.Rank(), f)) {
			return fmt.Errorf("rank %d file %d: content differs", s.Rank(), f)
		}
	}
	return nil
}

func TestSingleProcess(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{CacheDir: t.TempDir(), Node: "solo"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Restart(ctx); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("restart of an empty cache: %v", err)
	}
	for _, name := range []string{"step-1", "step-2"} {
		if err := writeCheckpoint(ctx, s, name); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Restart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Source != SourceCache || res.ID() != 2 {
		t.Errorf("source %s, id %d", res.Source, res.ID())
	}
	if err := checkRestored(ctx, s, res, "step-2"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "step-2" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func TestLoseAnyNodeRebuilds(t *testing.T) {
	for _, tc := range []struct {
		scheme       string
		ranks, nodes int
		lose         [][]int
	}{
		{"xor:4", 8, 4, [][]int{{0}, {1}, {2}, {3}}},
		{"partner", 4, 2, [][]int{{0}, {1}}},
		{"rs:4+2", 6, 6, [][]int{{0, 1}, {2, 5}, {3}}},
	} {
		for _, lost := range tc.lose {
			t.Run(fmt.Sprintf("%s/lose%v", tc.scheme, lost), func(t *testing.T) {
				ctx := context.Background()
				j := newTestJob(t, tc.ranks, tc.nodes, tc.scheme)
				j.mustRun(func(r int, s *Store) error { return writeCheckpoint(ctx, s, "c1") })
				for _, n := range lost {
					j.loseNode(n)
				}
				j.relaunch()
				j.mustRun(func(r int, s *Store) error {
					res, err := s.Restart(ctx)
					if err != nil {
						return err
					}
					if res.Source != SourceRebuild {
						return fmt.Errorf("source %s, want rebuild", res.Source)
					}
					return checkRestored(ctx, s, res, "c1")
				})
				// The rebuilt caches are whole again: the next restart needs nothing.
				j.relaunch()
				j.mustRun(func(r int, s *Store) error {
					res, err := s.Restart(ctx)
					if err != nil {
						return err
					}
					if res.Source != SourceCache {
						return fmt.Errorf("second restart: source %s", res.Source)
					}
					return nil
				})
			})
		}
	}
}

// Open takes its identity from the launcher's variables, else from
// Slurm's (and Open MPI's, PMI's); a malformed CKPT_RANK is a
// configuration error, not a reason to take another launcher's identity.
func TestOpenIdentityFromEnvironment(t *testing.T) {
	t.Setenv(jobenv.VarRank, "")
	t.Setenv(jobenv.VarSize, "")
	os.Unsetenv(jobenv.VarRank)
	os.Unsetenv(jobenv.VarSize)
	t.Setenv("SLURM_PROCID", "1")
	t.Setenv("SLURM_NTASKS", "2")
	_, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err == nil || !strings.Contains(err.Error(), "rank 1 of 2 needs a Comm") {
		t.Errorf("under Slurm as rank 1 of 2 without a Comm: %v", err)
	}
	t.Setenv(jobenv.VarRank, "x")
	t.Setenv(jobenv.VarSize, "2")
	_, err = Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), jobenv.VarRank) {
		t.Errorf("a malformed %s: %v, want a configuration error naming it", jobenv.VarRank, err)
	}
	s, err := Open(Options{Rank: 0, Size: 1, CacheDir: t.TempDir(), Node: "n"})
	if err != nil {
		t.Fatalf("the options' identity over a malformed %s: %v", jobenv.VarRank, err)
	}
	s.Close()
}
