package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/testwait"
)

func TestSolo(t *testing.T) {
	all, err := Solo{}.AllGather(context.Background(), []byte("x"))
	if err != nil || len(all) != 1 || string(all[0]) != "x" {
		t.Fatalf("got %q, %v", all, err)
	}
}

// Many rounds with every rank contributing its own data: every rank sees
// every contribution of the same round, in rank order.
func TestLocalAllGatherRounds(t *testing.T) {
	const n, rounds = 5, 200
	members := Local(n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, m := range members {
		wg.Add(1)
		go func(m *Member) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				all, err := m.AllGather(context.Background(), []byte(fmt.Sprintf("%d/%d", r, m.Rank())))
				if err != nil {
					errs <- err
					return
				}
				for i, d := range all {
					if want := fmt.Sprintf("%d/%d", r, i); string(d) != want {
						errs <- fmt.Errorf("rank %d round %d: slot %d = %q, want %q", m.Rank(), r, i, d, want)
						return
					}
				}
			}
		}(m)
	}
	testwait.Group(t, &wg, "the members")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A failed rank releases everyone waiting for it, now and later.
func TestLocalFailureReleasesWaiters(t *testing.T) {
	members := Local(3)
	results := make(chan error, 2)
	for _, m := range members[:2] {
		go func(m *Member) {
			_, err := m.AllGather(context.Background(), []byte("a"))
			results <- err
		}(m)
	}
	time.Sleep(10 * time.Millisecond)
	members[2].Fail(errors.New("killed"))
	for i := 0; i < 2; i++ {
		select {
		case err := <-results:
			if !errors.Is(err, ErrFailed) {
				t.Errorf("waiter: err = %v, want ErrFailed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter hangs after the failure")
		}
	}
	if _, err := members[0].AllGather(context.Background(), nil); !errors.Is(err, ErrFailed) {
		t.Errorf("later call: err = %v, want ErrFailed", err)
	}
}

// A cancelled context unblocks the caller and fails the group for the others.
func TestLocalContextCancel(t *testing.T) {
	members := Local(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := members[0].AllGather(ctx, nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v", err)
	}
	if _, err := members[1].AllGather(context.Background(), nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("peer: err = %v", err)
	}
}

func TestAllAgree(t *testing.T) {
	members := Local(3)
	var wg sync.WaitGroup
	got := make([]bool, 3)
	for i, m := range members {
		wg.Add(1)
		go func(i int, m *Member) {
			defer wg.Done()
			got[i], _ = AllAgree(context.Background(), m, i != 1)
		}(i, m)
	}
	testwait.Group(t, &wg, "the members")
	for i, ok := range got {
		if ok {
			t.Errorf("rank %d: agreed although rank 1 did not", i)
		}
	}
}

func TestAllGatherTwiceInARoundIsAnError(t *testing.T) {
	members := Local(2)
	defer members[1].Fail(errors.New("test over")) // releases the first call
	go members[0].AllGather(context.Background(), []byte("a"))
	time.Sleep(10 * time.Millisecond)
	if _, err := members[0].AllGather(context.Background(), []byte("b")); err == nil {
		t.Error("second call in the same round accepted")
	}
}
