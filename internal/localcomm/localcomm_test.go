package localcomm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/testwait"
)

// transports connects every member of a set of the given ranks.
func transports(t *testing.T, comms []*localcomm.Comm, members []int) []redundancy.Transport {
	t.Helper()
	out := make([]redundancy.Transport, len(members))
	for i, r := range members {
		tr, _, err := comms[r].SetTransport(context.Background(), members, 1)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tr
	}
	return out
}

// A crashed rank fails the job's collectives and its sets' transports,
// including a receive already waiting for it, instead of leaving its
// peers waiting.
func TestFailClosesTransports(t *testing.T) {
	nw := localcomm.NewNetwork(3)
	comms := nw.Comms()
	trs := transports(t, comms, []int{0, 2})
	got := make(chan error, 1)
	go func() {
		_, err := trs[0].Recv(context.Background(), 1, 7, nil) // from rank 2
		got <- err
	}()
	boom := errors.New("boom")
	comms[2].Fail(boom)
	if err := testwait.Recv(t, got, "the receive from the crashed rank"); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("receive from a crashed rank: %v, want ErrPeerClosed", err)
	}
	if _, err := comms[0].AllGather(context.Background(), nil); !errors.Is(err, group.ErrFailed) || !errors.Is(err, boom) {
		t.Errorf("collective after a crash: %v, want ErrFailed wrapping the reason", err)
	}
	// A set formed after the crash has the dead rank closed from the start.
	late := transports(t, comms, []int{1, 2})
	if err := late[0].Send(context.Background(), 1, 1, []byte("x")); !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("send to a rank that crashed before the set formed: %v", err)
	}
}

// A partition fails transfers across it, at once or when it comes, and
// leaves those within a side alone; Heal lets them cross again.
func TestPartitionCutsOnlyAcross(t *testing.T) {
	ctx := context.Background()
	nw := localcomm.NewNetwork(4)
	trs := transports(t, nw.Comms(), []int{0, 1, 2, 3})
	blocked := make(chan error, 1)
	go func() {
		_, err := trs[2].Recv(ctx, 0, 5, nil) // waits: 0 sends nothing yet
		blocked <- err
	}()
	nw.Partition([]int{0, 1})
	if err := testwait.Recv(t, blocked, "the receive blocked across the cut"); !errors.Is(err, localcomm.ErrPartitioned) || !errors.Is(err, redundancy.ErrPeerClosed) {
		t.Errorf("receive blocked across the cut: %v, want ErrPartitioned and ErrPeerClosed", err)
	}
	if err := trs[3].Send(ctx, 1, 1, []byte("x")); !errors.Is(err, localcomm.ErrPartitioned) {
		t.Errorf("send across the cut: %v", err)
	}
	if err := trs[0].Send(ctx, 1, 1, []byte("same side")); err != nil {
		t.Errorf("send within a side: %v", err)
	}
	if b, err := trs[1].Recv(ctx, 0, 1, nil); err != nil || string(b) != "same side" {
		t.Errorf("receive within a side: %q, %v", b, err)
	}
	if _, err := nw.Comms()[3].AllGather(ctx, nil); !errors.Is(err, localcomm.ErrPartitioned) {
		t.Errorf("collective of a partitioned job: %v", err)
	}
	nw.Heal()
	if err := trs[3].Send(ctx, 1, 2, []byte("healed")); err != nil {
		t.Errorf("send across after Heal: %v", err)
	}
	if b, err := trs[1].Recv(ctx, 3, 2, nil); err != nil || string(b) != "healed" {
		t.Errorf("receive across after Heal: %q, %v", b, err)
	}
}
