package uncoord

import (
	"context"
	"encoding/binary"
	"fmt"
)

// Collectives under the strategy are built from the rank's logged
// point-to-point messages, not from the coordinator's: a message of a
// collective is logged by its receiver and replayed like any other, so a
// rank recovering alone re-executes its collectives against its log while
// the others, already past them, are not disturbed (the messages it sends
// again are suppressed by their sequence numbers: msglog.Sender). The
// coordinator's collectives, which have no log, could not give a
// restarted rank the results its peers saw.
//
// AllGather gathers every contribution to rank 0, which sends the whole
// set to every rank: 2(n−1) messages, each logged once, and rank 0's
// receives in rank order, so that a replay meets them in the order they
// were logged. A ring or a dissemination would spread the load, but its
// messages carry the same bytes through more logs; with the small
// contributions collectives carry here (a step's partial sums, a
// checksum), the number of messages and appends is what counts.

// P2P is what a collective needs: point-to-point messages on a channel of
// their own, logged by the receiver (a Rank; the runtime gives one that
// sends on a reserved tag).
type P2P interface {
	Send(ctx context.Context, to int, data []byte) error
	Recv(ctx context.Context, from int) ([]byte, error)
}

// AllGather contributes data and returns every rank's, indexed by rank.
// Every rank of size calls it, in the same order relative to its other
// collectives and to its messages to and from rank 0.
func AllGather(ctx context.Context, p P2P, rank, size int, data []byte) ([][]byte, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("uncoord: all-gather of rank %d of %d", rank, size)
	}
	if size == 1 {
		return [][]byte{data}, nil
	}
	if rank != 0 {
		if err := p.Send(ctx, 0, data); err != nil {
			return nil, fmt.Errorf("uncoord: all-gather: to rank 0: %w", err)
		}
		b, err := p.Recv(ctx, 0)
		if err != nil {
			return nil, fmt.Errorf("uncoord: all-gather: from rank 0: %w", err)
		}
		all, err := decodeGathered(b, size)
		if err != nil {
			return nil, fmt.Errorf("uncoord: all-gather: from rank 0: %w", err)
		}
		return all, nil
	}
	all := make([][]byte, size)
	all[0] = data
	for r := 1; r < size; r++ {
		b, err := p.Recv(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("uncoord: all-gather: from rank %d: %w", r, err)
		}
		all[r] = b
	}
	msg := encodeGathered(all)
	for r := 1; r < size; r++ {
		if err := p.Send(ctx, r, msg); err != nil {
			return nil, fmt.Errorf("uncoord: all-gather: to rank %d: %w", r, err)
		}
	}
	return all, nil
}

// Barrier returns once every rank of size reached it: an AllGather of
// nothing.
func Barrier(ctx context.Context, p P2P, rank, size int) error {
	_, err := AllGather(ctx, p, rank, size, nil)
	return err
}

// encodeGathered is every contribution, each as a uvarint length and its
// bytes.
func encodeGathered(all [][]byte) []byte {
	n := 0
	for _, d := range all {
		n += binary.MaxVarintLen64 + len(d)
	}
	b := make([]byte, 0, n)
	for _, d := range all {
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
	}
	return b
}

func decodeGathered(b []byte, size int) ([][]byte, error) {
	all := make([][]byte, size)
	for r := range all {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("the gathered contributions are cut short at rank %d's", r)
		}
		all[r], b = b[k:k+int(n)], b[k+int(n):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after the gathered contributions of %d ranks", len(b), size)
	}
	return all, nil
}
