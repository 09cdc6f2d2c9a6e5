package ckpt

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/testwait"
)

// The writer side of TestKilledWriter: a job of 8 ranks on 4 nodes (as
// goroutines of this process) commits checkpoint "c2" over "c1", until the
// parent kills it with SIGKILL.
func TestKillHelperWriter(t *testing.T) {
	root := os.Getenv("CKPT_KILL_ROOT")
	if root == "" {
		t.Skip("helper process of TestKilledWriter")
	}
	j := openTestJob(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: os.Getenv("CKPT_KILL_SCHEME"), Dir: root})
	fmt.Println("ready")
	j.mustRun(func(r int, s *Store) error {
		// A large file first, so that the kill points cover writing,
		// encoding and committing alike.
		c, err := s.Start("c2")
		if err != nil {
			return err
		}
		w, err := c.Create("big.bin")
		if err != nil {
			return err
		}
		block := make([]byte, 64<<10)
		for i := range 64 {
			block[0] = byte(i + r)
			if _, err := w.Write(block); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		for f := 0; f < filesPerRank; f++ {
			w, err := c.Create(fmt.Sprintf("f%d.bin", f))
			if err != nil {
				return err
			}
			w.Write(content("c2", r, f))
			if err := w.Close(); err != nil {
				return err
			}
		}
		return c.Commit(context.Background())
	})
	fmt.Println("committed")
}

// A writer killed with SIGKILL at random points during writing, encoding
// and committing: the previous checkpoint restores bit-exact, or the new one
// if its commit finished; nothing partial is ever listed or restored.
func TestKilledWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	const scheme = "xor:4"
	runs := 24
	// How long does a whole run take? Kill points spread over it.
	full := func() time.Duration {
		root := t.TempDir()
		prepare(t, root, scheme)
		cmd := helper(root, scheme)
		startHelper(t, cmd)
		start := time.Now()
		if err := testwait.Cmd(t, cmd, "the writer"); err != nil {
			t.Fatalf("helper: %v", err)
		}
		return time.Since(start)
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	restoredNew := 0
	for i := 0; i < runs; i++ {
		root := t.TempDir()
		prepare(t, root, scheme)
		cmd := helper(root, scheme)
		startHelper(t, cmd)
		delay := time.Duration(rng.Int64N(int64(full)))
		time.Sleep(delay)
		cmd.Process.Kill() // SIGKILL
		testwait.Cmd(t, cmd, "the killed writer")

		j := openTestJob(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: scheme, Dir: root})
		j.mustRun(func(r int, s *Store) error {
			list, err := s.List(context.Background())
			if err != nil {
				return err
			}
			res, err := s.Restart(context.Background())
			if err != nil {
				return fmt.Errorf("kill after %v: %w", delay, err)
			}
			for _, l := range list {
				if l.Name != "c1" && l.Name != "c2" {
					return fmt.Errorf("unexpected checkpoint %q listed", l.Name)
				}
			}
			return checkRestored(context.Background(), s, res, res.Name())
		})
		if n := j.stores[0]; n != nil {
			if res, err := cachetier.List(context.Background(), n.eng.Cache); err == nil && len(res) > 0 && res[0].Name == "c2" {
				restoredNew++
			}
		}
	}
	t.Logf("%d kill points over %v; the new checkpoint had committed in %d", runs, full, restoredNew)
}

// prepare writes checkpoint c1 into the caches below root.
func prepare(t *testing.T, root, scheme string) {
	t.Helper()
	j := openTestJob(t, cluster.Config{Ranks: 8, Nodes: 4, Scheme: scheme, Dir: root})
	j.mustRun(func(r int, s *Store) error { return writeCheckpoint(context.Background(), s, "c1") })
}

// startHelper starts the writer and returns once it is ready to write.
func startHelper(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // if the test ends first (it has usually exited)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				io.Copy(io.Discard, out)
				return
			}
		}
		ready <- false
	}()
	if !testwait.Recv(t, ready, "the writer to be ready") {
		t.Fatal("the writer exited before it was ready")
	}
}

func helper(root, scheme string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CKPT_KILL_ROOT="+root, "CKPT_KILL_SCHEME="+scheme)
	return cmd
}
