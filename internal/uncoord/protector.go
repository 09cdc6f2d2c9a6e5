package uncoord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/placement"
)

// Protectors opens a rank's message log at its protector. FileProtectors
// is the implementation for nodes that share a machine (the local
// launcher); a networked protector, appending to a log on another host,
// implements the same seam.
type Protectors interface {
	OpenLog(rank int) (logstore.Store, error)
}

// FileProtectors keeps each rank's log as a logstore.File in the cache
// directory of its protector's node: Dir(rank) names that directory.
//
// NoSync follows the job's cache durability (ckpt.DurableProcess): the
// appends are not synced, a record is durable once it is in the protector
// node's page cache. That keeps Fialho et al. 2011's pessimistic guarantee
// (§3.2: no message is delivered that a failure could lose) under the
// failure model process durability declares: the log lives on another
// failure domain than its receiver (ProtectorOf), so a killed receiver, or
// the receiver's whole node lost, finds every record it was delivered in
// the protector node's page cache. What it gives up is the protector
// node's own crash: its page cache goes, and with it the logs it holds —
// but process durability already counts a crashed node as lost, and a
// lost protector is re-formed (its ranks' logs must be rebuilt from a new
// checkpoint) whatever the log's durability, so syncing would buy a
// rebooted node's log, which the job does not use. Without NoSync (node
// durability) every append is synced.
type FileProtectors struct {
	Dir    func(rank int) (string, error)
	NoSync bool
}

// OpenLog opens (creating it if need be) the log of rank.
func (p FileProtectors) OpenLog(rank int) (logstore.Store, error) {
	path, err := p.path(rank)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("uncoord: protector of rank %d: %w", rank, err)
	}
	return logstore.OpenFileWith(path, logstore.FileOptions{NoSync: p.NoSync})
}

// RemoveLog deletes the log of rank, if any: a rank that starts from the
// beginning (a whole-job relaunch) starts a fresh log.
func (p FileProtectors) RemoveLog(rank int) error {
	path, err := p.path(rank)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("uncoord: protector of rank %d: %w", rank, err)
	}
	return nil
}

func (p FileProtectors) path(rank int) (string, error) {
	dir, err := p.Dir(rank)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "msglog", fmt.Sprintf("rank-%d.log", rank)), nil
}

// ProtectorOf returns the rank that protects rank's log and checkpoints:
// as in RADIC's ring, the next rank in rank order, wrapping around, whose
// failure domain is not rank's, so that losing a whole node (or domain)
// loses a rank or its log, never both. ok is false when every member
// shares rank's domain (a job on one node): nothing can protect it.
func ProtectorOf(members []placement.Member, rank int) (protector int, ok bool) {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b placement.Member) int { return a.Rank - b.Rank })
	i := slices.IndexFunc(ms, func(m placement.Member) bool { return m.Rank == rank })
	if i < 0 {
		return 0, false
	}
	dom := ms[i].FailureDomain()
	for k := 1; k < len(ms); k++ {
		m := ms[(i+k)%len(ms)]
		if m.FailureDomain() != dom {
			return m.Rank, true
		}
	}
	return 0, false
}
