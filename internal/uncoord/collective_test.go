package uncoord

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/zeebo/xxh3"
)

const collRanks, collRounds = 4, 24

// collProgram runs rounds [0, collRounds) of a program made of
// collectives only: each round all-gathers a value that depends on every
// earlier round's result, and every third round is also a barrier. It
// returns the hash of each round's gathered set; stop, if set, ends it
// after a round (a crash: the rest is not run).
func collProgram(ctx context.Context, d P2P, rank int, stop func(round int) bool) ([]uint64, error) {
	v := uint64(rank)
	var got []uint64
	for round := range collRounds {
		all, err := AllGather(ctx, d, rank, collRanks, binary.LittleEndian.AppendUint64(make([]byte, round%3), v))
		if err != nil {
			return got, fmt.Errorf("round %d: %w", round, err)
		}
		if len(all) != collRanks {
			return got, fmt.Errorf("round %d: %d contributions", round, len(all))
		}
		h := xxh3.Hash(encodeGathered(all))
		got = append(got, h)
		v = mix(v ^ h ^ uint64(round))
		if round%3 == 0 {
			if err := Barrier(ctx, d, rank, collRanks); err != nil {
				return got, fmt.Errorf("round %d: barrier: %w", round, err)
			}
		}
		if stop != nil && stop(round) {
			return got, nil
		}
	}
	return got, nil
}

// runColl runs the program on every rank over a MemNet; crashAt >= 0 makes
// rank 1 fail after that round and restart alone from the beginning
// (no checkpoint), re-executing every collective against its log while
// the others go on. It returns each rank's results (the restarted rank's
// last incarnation's) and the first incarnation's of rank 1.
func runColl(t *testing.T, crashAt int) (res [][]uint64, first []uint64, stats Stats) {
	return runCollCrash(t, 1, func(int) bool { return crashAt >= 0 }, func(round int) bool { return round == crashAt }, -1)
}

// crashP2P crashes its rank after its first ops sends and receives:
// in the middle of a collective.
type crashP2P struct {
	P2P
	ops int
}

func (c *crashP2P) Send(ctx context.Context, to int, data []byte) error {
	if c.ops <= 0 {
		return errCrashed
	}
	c.ops--
	return c.P2P.Send(ctx, to, data)
}

func (c *crashP2P) Recv(ctx context.Context, from int) ([]byte, error) {
	if c.ops <= 0 {
		return nil, errCrashed
	}
	c.ops--
	return c.P2P.Recv(ctx, from)
}

// runCollCrash is runColl with rank victim crashed, when crash says so,
// after the round stop says or (ops >= 0) after its first ops sends and
// receives, in the middle of a collective.
func runCollCrash(t *testing.T, victim int, crash, stop func(int) bool, ops int) (res [][]uint64, first []uint64, stats Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net := NewMemNet()
	logs := make([]logstore.Store, collRanks)
	res = make([][]uint64, collRanks)
	errs := make([]error, collRanks)
	drvs := make([]*Rank, collRanks)
	var wg sync.WaitGroup
	for r := range collRanks {
		logs[r] = logstore.NewMem()
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Start(ctx, Config{Rank: r, Size: collRanks, Net: net.Endpoint(r), Log: logs[r]})
			if err != nil {
				errs[r] = err
				return
			}
			if r == victim && crash(r) {
				var p P2P = d
				if ops >= 0 {
					p = &crashP2P{P2P: d, ops: ops}
				}
				first, err = collProgram(ctx, p, r, stop)
				net.Kill(r)
				d.Close()
				if errors.Is(err, errCrashed) {
					err = nil
				}
				if err != nil {
					errs[r] = err
					return
				}
				// Restarted alone, from the beginning: its log replays
				// what it received, its sends are suppressed.
				d, err = Start(ctx, Config{Rank: r, Size: collRanks, Net: net.Endpoint(r), Log: logs[r], Restarted: true})
				if err != nil {
					errs[r] = fmt.Errorf("restart: %w", err)
					return
				}
			}
			res[r], errs[r] = collProgram(ctx, d, r, nil)
			if err := d.Flush(ctx); err != nil && errs[r] == nil {
				errs[r] = err
			}
			if r == victim {
				stats = d.Stats()
			}
			// Closed once every rank is done: a rank closing early would
			// drop the frames a peer still waits for.
			drvs[r] = d
		}()
	}
	wg.Wait()
	for _, d := range drvs {
		if d != nil {
			d.Close()
		}
	}
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return res, first, stats
}

// AllGather and Barrier over the ranks' logged messages give every rank
// the same set; a rank killed mid-run and restarted alone from the
// beginning re-executes its collectives against its log and gets exactly
// what it got before, and every rank ends as in a failure-free run.
func TestCollectivesReplayAlone(t *testing.T) {
	ref, _, _ := runColl(t, -1)
	for r := 1; r < collRanks; r++ {
		if !slices.Equal(ref[r], ref[0]) {
			t.Fatalf("failure-free: rank %d's gathered sets differ from rank 0's", r)
		}
	}
	got, first, st := runColl(t, 9)
	for r := range collRanks {
		if !slices.Equal(got[r], ref[r]) {
			t.Errorf("rank %d with rank 1 restarted alone: results differ from the failure-free run", r)
		}
	}
	if len(first) != 10 || !slices.Equal(first, ref[1][:10]) {
		t.Errorf("rank 1's first incarnation: %d rounds, not the failure-free run's first 10", len(first))
	}
	if st.Replayed == 0 || st.Skipped == 0 {
		t.Errorf("rank 1's restart replayed %d messages and skipped %d sends: want both > 0", st.Replayed, st.Skipped)
	}
}

// Rank 0, through which every collective goes, killed in the middle of
// one (some contributions received, the set sent to some ranks or none)
// and restarted alone from the beginning: its log gives it the
// contributions again in the order it took them, its sets are not sent
// again to the ranks that have them, and are to those that do not; every
// rank ends as in a failure-free run. So does a rank other than 0 killed
// between sending its contribution and receiving the set.
func TestCollectivesReplayAloneMidCollective(t *testing.T) {
	ref, _, _ := runColl(t, -1)
	never := func(int) bool { return false }
	always := func(int) bool { return true }
	// Rank 0's round 0 is an all-gather (3 receives, 3 sends) and a
	// barrier (the same): operations 0–11; rounds 1 and 2 are 12–17 and
	// 18–23, round 3 is 24–35. After 19, 22, 26 or 33 operations rank 0
	// is in round 2's all-gather after one receive, after every receive
	// and one send, in round 3's after two receives, and in round 3's
	// barrier after every receive and no send. Rank 2 after 7 sent round
	// 2's contribution and did not receive the set; rank 3 after 13,
	// round 4's.
	for _, c := range []struct{ victim, ops int }{{0, 19}, {0, 22}, {0, 26}, {0, 33}, {2, 7}, {3, 13}} {
		got, _, st := runCollCrash(t, c.victim, always, never, c.ops)
		for r := range collRanks {
			if !slices.Equal(got[r], ref[r]) {
				t.Errorf("rank %d killed after %d operations: rank %d's results differ from the failure-free run", c.victim, c.ops, r)
			}
		}
		if st.Replayed == 0 || st.Skipped == 0 {
			t.Errorf("rank %d killed after %d operations: its restart replayed %d messages and skipped %d sends: want both > 0",
				c.victim, c.ops, st.Replayed, st.Skipped)
		}
	}
}

func TestGatheredEncoding(t *testing.T) {
	all := [][]byte{nil, []byte("a"), make([]byte, 300)}
	b := encodeGathered(all)
	got, err := decodeGathered(b, 3)
	if err != nil || len(got) != 3 || len(got[0]) != 0 || string(got[1]) != "a" || len(got[2]) != 300 {
		t.Fatalf("decoded %q, %v", got, err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0), b[:1]} {
		if _, err := decodeGathered(bad, 3); err == nil {
			t.Errorf("decoding %d damaged bytes succeeded", len(bad))
		}
	}
	if _, err := AllGather(context.Background(), nil, 2, 2, nil); err == nil {
		t.Error("an all-gather of rank 2 of 2 succeeded")
	}
	if all, err := AllGather(context.Background(), nil, 0, 1, []byte("x")); err != nil || len(all) != 1 || string(all[0]) != "x" {
		t.Errorf("an all-gather of one rank: %q, %v", all, err)
	}
}
