package launch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/policy"
)

// TestCheckpointNow: a request makes the next decision round checkpoint
// without halting, once; OnDecision sees each round's step and answer.
func TestCheckpointNow(t *testing.T) {
	var seen []int64
	f := &Coordinators{Ranks: 2, Nodes: 1, Policy: policy.Policy{Kind: policy.Time, Period: time.Hour},
		OnDecision: func(step int64, d policy.Decision) {
			if d.Checkpoint {
				seen = append(seen, step)
			}
		}}
	round := func(step int64) policy.Decision {
		t.Helper()
		r := policy.Report{Step: step, Elapsed: time.Minute, SinceCheckpoint: time.Second, StepTime: time.Millisecond, Window: 10}
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		ans, err := f.decide(0, [][]byte{b, b})
		if err != nil {
			t.Fatal(err)
		}
		var d policy.Decision
		if err := d.UnmarshalBinary(ans); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := round(10); d.Checkpoint {
		t.Fatalf("a round a second into an hour's interval checkpoints: %+v", d)
	}
	f.CheckpointNow()
	if d := round(20); !d.Checkpoint || d.Halt {
		t.Fatalf("the round after CheckpointNow: %+v, want a checkpoint without halt", d)
	}
	if d := round(30); d.Checkpoint {
		t.Fatalf("the request was used twice: %+v", d)
	}
	if len(seen) != 1 || seen[0] != 20 {
		t.Errorf("OnDecision saw checkpoints at steps %v, want [20]", seen)
	}
}

// A malformed report is a protocol error (the policy package's protocol,
// obligation 3): decide refuses the round, blaming the rank that sent it
// and naming the bad value, and neither the policy's state nor OnDecision
// sees it.
func TestDecideRefusesBadReports(t *testing.T) {
	good := policy.Report{Step: 7, Elapsed: time.Minute, SinceCheckpoint: time.Second, StepTime: time.Millisecond, Window: 10}
	enc := func(r policy.Report) []byte {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	negCost, otherStep := good, good
	negCost.CheckpointCost = -time.Second
	otherStep.Step = 8
	for _, tc := range []struct {
		name     string
		contribs [][]byte
		rank     int // blamed, or -1
		want     string
	}{
		{"negative cost", [][]byte{enc(good), enc(negCost)}, 1, "checkpoint cost -1s out of range"},
		{"undecodable", [][]byte{{0xff, 0xff}, enc(good)}, 0, "decision report: "},
		{"steps differ", [][]byte{enc(good), enc(otherStep)}, -1, "rank 1's report is for step 8, rank 0's for step 7"},
	} {
		decided := false
		f := &Coordinators{Ranks: 2, Nodes: 1, Policy: policy.Policy{Kind: policy.Time, Period: time.Hour},
			OnDecision: func(int64, policy.Decision) { decided = true }}
		ans, err := f.decide(0, tc.contribs)
		if err == nil {
			t.Errorf("%s: answered %x, want an error", tc.name, ans)
			continue
		}
		var re *coord.RankError
		switch {
		case tc.rank >= 0 && (!errors.As(err, &re) || re.Rank != tc.rank):
			t.Errorf("%s: %v does not blame rank %d", tc.name, err, tc.rank)
		case tc.rank < 0 && errors.As(err, &re):
			t.Errorf("%s: %v blames rank %d, want no one rank", tc.name, err, re.Rank)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.want)
		}
		if decided || f.State() != (policy.State{}) {
			t.Errorf("%s: the bad round reached the policy", tc.name)
		}
	}
}

// Over the network: a rank that sends a negative checkpoint cost aborts
// the attempt, and every rank and the coordinator's Err say which rank
// sent what.
func TestCoordinatorAbortsOnBadReport(t *testing.T) {
	f := &Coordinators{Ranks: 2, Nodes: 1, Policy: policy.Policy{Kind: policy.Time, Period: time.Hour}}
	co, err := f.New(0, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := policy.Report{Step: 5, Elapsed: time.Minute, SinceCheckpoint: time.Second, StepTime: time.Millisecond, Window: 10}
	bad := good
	bad.CheckpointCost = -3 * time.Second
	const want = "rank 1 (node n1): decide: decision report: invalid checkpoint policy: report for step 5: checkpoint cost -3s out of range"
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, rep := range []policy.Report{good, bad} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: co.Addr(), Token: "tok", Node: fmt.Sprintf("n%d", r), Rank: r, Size: 2})
			if err != nil {
				errs[r] = err
				return
			}
			defer c.Close()
			b, _ := rep.MarshalBinary()
			_, errs[r] = c.Decide(ctx, b)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: Decide: %v, want an abort saying %q", r, err, want)
		}
	}
	select {
	case <-co.Done():
	case <-ctx.Done():
		t.Fatal("the coordinator did not end after the abort")
	}
	if err := co.Err(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Err() = %v, want %q", err, want)
	}
}

// Uncoordinated: a rank whose connection is lost while the job runs is
// vacated, its next process rejoins the running attempt, and the attempt
// finishes when every rank left; tree mode is refused.
func TestCoordinatorRejoinsRankAlone(t *testing.T) {
	if _, err := (&Coordinators{Ranks: 2, Nodes: 1, Tree: true, Uncoordinated: true}).New(0, "tok"); err == nil {
		t.Error("tree mode with Uncoordinated: no error")
	}
	// The coordinator's goroutine must never block on the test: notices
	// go to a list, and a channel of one says the list grew.
	var mu sync.Mutex
	var seen []coord.Notice
	grew := make(chan struct{}, 1)
	f := &Coordinators{Ranks: 2, Nodes: 1, Uncoordinated: true,
		OnNotice: func(_ uint64, n coord.Notice) {
			mu.Lock()
			seen = append(seen, n)
			mu.Unlock()
			select {
			case grew <- struct{}{}:
			default:
			}
		}}
	co, err := f.New(0, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(r int) *coordnet.Client {
		c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: co.Addr(), Token: "tok", Node: fmt.Sprintf("n%d", r), Rank: r, Size: 2})
		if err != nil {
			// Called from goroutines too: Errorf, and the caller checks.
			t.Errorf("rank %d: %v", r, err)
			return nil
		}
		return c
	}
	next := 0 // the first notice await has not looked at
	await := func(kind coord.NoticeKind) {
		t.Helper()
		for {
			mu.Lock()
			for ; next < len(seen); next++ {
				if seen[next].Kind == kind {
					next++
					mu.Unlock()
					return
				}
			}
			mu.Unlock()
			select {
			case <-grew:
			case <-ctx.Done():
				t.Fatalf("no %v notice", kind)
			}
		}
	}
	var wg sync.WaitGroup
	cs := make([]*coordnet.Client, 2)
	for r := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); cs[r] = dial(r) }()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	await(coord.NoticeStarted)
	cs[1].Close() // as a killed process: no Leave
	await(coord.NoticeLost)
	j := co.(Joiner)
	if j.Joined(1) {
		t.Error("rank 1 still counted as joined after its loss")
	}
	if cs[1] = dial(1); cs[1] == nil {
		return
	}
	await(coord.NoticeRejoined)
	if !j.Joined(1) {
		t.Error("rank 1 not counted as joined after it rejoined")
	}
	select {
	case <-co.Done():
		t.Fatalf("the attempt ended: %v", co.Err())
	default:
	}
	for r, c := range cs {
		if err := c.Leave(); err != nil {
			t.Fatalf("rank %d: leave: %v", r, err)
		}
	}
	select {
	case <-co.Done():
	case <-ctx.Done():
		t.Fatal("the attempt did not finish after every rank left")
	}
	if err := co.Err(); err != nil {
		t.Errorf("Err() = %v after every rank left", err)
	}
}
