package ckpt

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/internal/storage/throttle"
)

// startStageServer runs a staging server on loopback accepting token.
func startStageServer(t *testing.T, shared *mem.Backend, token string) string {
	t.Helper()
	srv, err := stage.NewServer(stage.Config{Shared: shared, Token: token, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// soloStaged runs a job of one rank that takes n checkpoints, each flushed
// through the staging server at addr, and returns its flush statistics
// once no flush is pending.
func soloStaged(t *testing.T, shared *mem.Backend, addr string, n int) FlushStats {
	t.Helper()
	ctx := t.Context()
	j, err := Join(ctx, JobOptions{Store: Options{CacheDir: t.TempDir(), Node: "solo", Shared: shared}, Staging: addr, FlushBusy: FlushWait})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := 1; i <= n; i++ {
		err := j.Checkpoint(ctx, "ck."+string(rune('0'+i)), func(c *Checkpoint) error {
			f, err := c.Create("state")
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte(strings.Repeat("x", 1000*i))); err != nil {
				return err
			}
			return f.Close()
		})
		if err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	j.r.WaitFlushes(wctx)
	return j.FlushStats()
}

// A job whose staging server takes its token flushes every checkpoint in
// the background; each is committed on the shared tier.
func TestJobStagedFlush(t *testing.T) {
	shared := mem.New()
	t.Setenv(jobenv.VarStageToken, "right")
	addr := startStageServer(t, shared, "right")
	f := soloStaged(t, shared, addr, 3)
	if f.Mode != "nonblocking" || f.Started != 3 || f.Durable != 3 || f.Failed != 0 {
		t.Fatalf("flush stats %+v: want 3 non-blocking flushes durable", f)
	}
	// Durable is the node's part; the server writes the manifest just
	// after telling the node.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, err := sharedtier.List(t.Context(), shared)
		if err == nil && len(ms) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shared tier holds %d checkpoints (%v), want 3", len(ms), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A staging server that refuses the job's token fails the flushes, not the
// job: the checkpoints stand at level 1, the reason is reported.
func TestJobStagedWrongToken(t *testing.T) {
	shared := mem.New()
	t.Setenv(jobenv.VarStageToken, "wrong")
	addr := startStageServer(t, shared, "right")
	f := soloStaged(t, shared, addr, 2)
	if f.Failed == 0 || !strings.Contains(f.LastFailure, "token") {
		t.Fatalf("flush stats %+v: want failed flushes naming the token", f)
	}
	if ms, _ := sharedtier.List(t.Context(), shared); len(ms) != 0 {
		t.Errorf("a refused job's checkpoint reached the shared tier: %v", ms)
	}
}

// autoJob runs a job of one rank, --flush-every auto:1h, flushing
// blocking to a shared tier of 20 MB/s (a flush of its 1 MB state costs
// about 50 ms, against a level-1 checkpoint of a few), that takes n
// checkpoints with 20 ms of computation between them and deciding itself
// when (interval none).
func autoJob(t *testing.T, n int) FlushStats {
	t.Helper()
	ctx := t.Context()
	j, err := Join(ctx, JobOptions{Interval: "none", FlushAuto: time.Hour,
		Store: Options{CacheDir: t.TempDir(), Node: "solo", Shared: throttle.New(mem.New(), 20e6)}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := 1; i <= n; i++ {
		time.Sleep(20 * time.Millisecond) // computation
		err := j.Checkpoint(ctx, fmt.Sprintf("ck.%d", i), func(c *Checkpoint) error {
			f, err := c.Create("state")
			if err != nil {
				return err
			}
			if _, err := f.Write(make([]byte, 1<<20)); err != nil {
				return err
			}
			return f.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return j.FlushStats()
}

// An application that decides itself when to checkpoint has no policy
// interval: auto takes the computation measured between its checkpoints,
// and chooses K once a flush has been measured (the first goes at once).
func TestFlushEveryAutoWithoutInterval(t *testing.T) {
	f := autoJob(t, 8)
	if f.KError != "" || f.K <= 1 {
		t.Fatalf("K = %d (%q): want one chosen above 1 for a flush ~10× a level-1 checkpoint, 1 h MTTI", f.K, f.KError)
	}
	if f.Due >= 8 || f.Started != f.Due || f.Spans != 7 {
		t.Errorf("stats %+v: want fewer than 8 flushes, all done, 7 spans measured", f)
	}
}

// A relaunched job chooses K from what the launches before it measured
// (CKPT_FLUSH_PRIOR, from the launcher) at its first checkpoint, instead
// of flushing every checkpoint until it has measured a flush again.
func TestFlushEveryAutoPrior(t *testing.T) {
	prior := FlushStats{Mode: "blocking", K: 12, Due: 2, Started: 2, Seconds: 0.1,
		Level1: 6, Level1Seconds: 0.03, Spans: 5, SpanSeconds: 0.1}
	b, err := json.Marshal(prior)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(jobenv.VarFlushPrior, string(b))
	f := autoJob(t, 3)
	if f.KError != "" || f.K <= 3 || f.Due != 0 {
		t.Errorf("stats %+v: want K > 3 chosen at once from the earlier launches, no flush due in 3 checkpoints", f)
	}
	t.Setenv(jobenv.VarFlushPrior, "{not json")
	_, err = Join(t.Context(), JobOptions{Store: Options{CacheDir: t.TempDir(), Node: "solo"}})
	if err == nil || !strings.Contains(err.Error(), jobenv.VarFlushPrior) {
		t.Errorf("malformed %s: %v, want an error naming it", jobenv.VarFlushPrior, err)
	}
}

// Every step is timed, without any flush too: the idle steps' mean is the
// job's speed measured in the run (StepSeconds), which ckpt demo sets
// against its failure-free reference.
func TestStepsTimedWithoutFlush(t *testing.T) {
	ctx := t.Context()
	j, err := Join(ctx, JobOptions{Interval: "1h", Store: Options{CacheDir: t.TempDir(), Node: "solo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const steps = 20
	for s := int64(1); s <= steps; s++ {
		time.Sleep(time.Millisecond) // computation
		if need, err := j.NeedCheckpoint(ctx, s); err != nil || need {
			t.Fatalf("step %d: need %v, %v", s, need, err)
		}
	}
	f := j.FlushStats()
	// The first call starts the clock; every later one ends a step.
	if f.Mode != "" || f.IdleSteps != steps-1 || f.BusySteps != 0 || !(f.StepSeconds() >= 0.001) {
		t.Errorf("flush stats %+v (step %v s): want %d idle steps of at least 1 ms and no flush", f, f.StepSeconds(), steps-1)
	}
}
