package ckptexternal_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"

	"example.com/ckptexternal"
)

func TestMapBackendConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend { return ckptexternal.NewMapBackend() })
}

const ranks = 4

// job is a launch of the job: one store per rank on the caches of the
// nodes (one node per rank), joined by a new channel communicator.
func launch(t *testing.T, caches []*ckptexternal.MapBackend, shared storage.Backend) []*ckpt.Store {
	t.Helper()
	comms := ckptexternal.NewChanJob(ranks)
	stores := make([]*ckpt.Store, ranks)
	for r := range ranks {
		s, err := ckpt.Open(ckpt.Options{Rank: r, Size: ranks, Node: fmt.Sprintf("node%d", r),
			Cache: caches[r], Shared: shared, Redundancy: "xor:4", Comm: comms.Comm(r), BlockSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		stores[r] = s
	}
	return stores
}

// each runs fn on every rank at once, as the ranks of a job do.
func each(t *testing.T, stores []*ckpt.Store, fn func(r int, s *ckpt.Store) error) {
	t.Helper()
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for r, s := range stores {
		wg.Go(func() { errs[r] = fn(r, s) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// state is rank r's file content: sizes differ between ranks, so the
// parity covers members of unequal length.
func state(name string, r int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%s rank %d;", name, r)), 1000+700*r)
}

func commit(t *testing.T, stores []*ckpt.Store, name string) {
	t.Helper()
	each(t, stores, func(r int, s *ckpt.Store) error {
		c, err := s.Start(name)
		if err != nil {
			return err
		}
		f, err := c.Create("state.bin")
		if err != nil {
			return err
		}
		if _, err := f.Write(state(name, r)); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return c.Commit(context.Background())
	})
}

// restart restarts every rank and checks what it read back.
func restart(t *testing.T, stores []*ckpt.Store, name, source string, rebuilt []int) {
	t.Helper()
	each(t, stores, func(r int, s *ckpt.Store) error {
		res, err := s.Restart(context.Background())
		if err != nil {
			return err
		}
		if res.Name() != name || res.Source != source || !slices.Equal(res.Rebuilt, rebuilt) {
			return fmt.Errorf("restored %s from %s rebuilding %v, want %s from %s rebuilding %v",
				res.Name(), res.Source, res.Rebuilt, name, source, rebuilt)
		}
		rd, err := res.Open("state.bin")
		if err != nil {
			return err
		}
		defer rd.Close()
		got, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, state(name, r)) {
			return fmt.Errorf("state.bin of %s differs from what rank %d wrote", name, r)
		}
		return nil
	})
}

// A checkpoint committed through the program's own Comm and backends comes
// back intact, then rebuilt from XOR parity after a node's cache is lost,
// then from the shared tier after every cache is lost.
func TestCommitRestartRebuild(t *testing.T) {
	caches := make([]*ckptexternal.MapBackend, ranks)
	for r := range caches {
		caches[r] = ckptexternal.NewMapBackend()
	}
	shared := ckptexternal.NewMapBackend()

	stores := launch(t, caches, shared)
	commit(t, stores, "c1")
	commit(t, stores, "c2")
	each(t, stores, func(r int, s *ckpt.Store) error { return s.Flush(context.Background(), "c2") })
	restart(t, launch(t, caches, shared), "c2", ckpt.SourceCache, nil)

	caches[2] = ckptexternal.NewMapBackend() // node 2 lost its cache
	restart(t, launch(t, caches, shared), "c2", ckpt.SourceRebuild, []int{2})
	// The rebuild restored node 2's part and parity: the checkpoint is
	// whole in the caches again.
	restart(t, launch(t, caches, shared), "c2", ckpt.SourceCache, nil)

	for r := range caches {
		caches[r] = ckptexternal.NewMapBackend()
	}
	restart(t, launch(t, caches, shared), "c2", ckpt.SourceShared, []int{0, 1, 2, 3})
}
