package ckpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/testwait"
)

// testJob is a job of ranks running as goroutines, spread over simulated
// nodes that each have a cache directory.
type testJob struct {
	t      *testing.T
	root   string
	nodes  int
	ranks  int
	scheme string
	caches []*local.Backend
	stores []*Store
}

func newTestJob(t *testing.T, ranks, nodes int, scheme string) *testJob {
	t.Helper()
	j := &testJob{t: t, root: t.TempDir(), nodes: nodes, ranks: ranks, scheme: scheme}
	j.openCaches()
	j.relaunch()
	return j
}

func (j *testJob) openCaches() {
	j.t.Helper()
	j.caches = nil
	for n := 0; n < j.nodes; n++ {
		b, err := local.New(filepath.Join(j.root, fmt.Sprintf("node%d", n)))
		if err != nil {
			j.t.Fatal(err)
		}
		j.caches = append(j.caches, b)
	}
}

// nodeOf places rank r on a node: ranks fill nodes round-robin.
func (j *testJob) nodeOf(r int) int { return r % j.nodes }

// relaunch opens fresh stores for every rank, as a restarted job would.
func (j *testJob) relaunch() {
	j.t.Helper()
	comms := LocalJob(j.ranks)
	j.stores = make([]*Store, j.ranks)
	for r := range j.stores {
		s, err := Open(Options{Rank: r, Size: j.ranks, Node: fmt.Sprintf("node%d", j.nodeOf(r)),
			Cache: j.caches[j.nodeOf(r)], Redundancy: j.scheme, Comm: comms[r], BlockSize: 4096})
		if err != nil {
			j.t.Fatal(err)
		}
		j.stores[r] = s
	}
}

// run runs fn on every rank concurrently and returns the errors by rank.
func (j *testJob) run(fn func(r int, s *Store) error) []error {
	errs := make([]error, j.ranks)
	var wg sync.WaitGroup
	for r, s := range j.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_ = ctx
			errs[r] = fn(r, s)
		}()
	}
	testwait.Group(j.t, &wg, "the ranks")
	return errs
}

func (j *testJob) mustRun(fn func(r int, s *Store) error) {
	j.t.Helper()
	for r, err := range j.run(fn) {
		if err != nil {
			j.t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// loseNode deletes a node's cache, as a node failure would.
func (j *testJob) loseNode(n int) {
	dir := filepath.Join(j.root, fmt.Sprintf("node%d", n))
	if err := os.RemoveAll(dir); err != nil {
		j.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.t.Fatal(err)
	}
}

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
