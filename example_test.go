package ckpt_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ckpt/ckpt"
)

// A single process checkpoints a file and reads it back after a restart.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ckpt-example")
	defer os.RemoveAll(dir)

	s, err := ckpt.Open(ckpt.Options{CacheDir: dir, Node: "node0"})
	if err != nil {
		panic(err)
	}
	c, _ := s.Start("step-100")
	f, _ := c.Create("state.txt")
	fmt.Fprint(f, "iteration 100")
	f.Close()
	if err := c.Commit(ctx); err != nil {
		panic(err)
	}

	r, err := s.Restart(ctx)
	if err != nil {
		panic(err)
	}
	rd, _ := r.Open("state.txt")
	b, _ := io.ReadAll(rd)
	fmt.Printf("%s from %s: %s\n", r.Name(), r.Source, b)
	// Output: step-100 from cache: iteration 100
}

// Four ranks as goroutines on two nodes, protected by PARTNER copies; one
// node's cache is lost and rebuilt from its partners.
func ExampleLocalJob() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "ckpt-example")
	defer os.RemoveAll(root)

	open := func(comms []ckpt.Comm, r int) *ckpt.Store {
		node := fmt.Sprintf("node%d", r%2)
		s, err := ckpt.Open(ckpt.Options{Rank: r, Size: 4, Node: node, CacheDir: root + "/" + node, Redundancy: "partner", Comm: comms[r]})
		if err != nil {
			panic(err)
		}
		return s
	}
	all := func(comms []ckpt.Comm, fn func(s *ckpt.Store)) {
		var wg sync.WaitGroup
		for r := range comms {
			wg.Add(1)
			go func() { defer wg.Done(); fn(open(comms, r)) }()
		}
		wg.Wait()
	}

	all(ckpt.LocalJob(4), func(s *ckpt.Store) {
		if err := ckpt.SaveValue(ctx, s, "step-1", []int{s.Rank(), s.Rank() * 10}); err != nil {
			panic(err)
		}
	})
	os.RemoveAll(root + "/node1") // node 1 fails with its cache

	var mu sync.Mutex
	got := make([][]int, 4)
	source := ""
	all(ckpt.LocalJob(4), func(s *ckpt.Store) {
		var v []int
		r, err := ckpt.LoadValue(ctx, s, &v)
		if err != nil {
			panic(err)
		}
		mu.Lock()
		got[s.Rank()], source = v, r.Source
		mu.Unlock()
	})
	fmt.Println(source, got)
	// Output: rebuild [[0 0] [1 10] [2 20] [3 30]]
}
