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

// NewLog starts a new, empty log of rank at its protector, of base base
// (logstore.CreateFile), replacing any there: the log of a rank that
// re-protects (Rank.Reprotect) after its protector was lost.
func (p FileProtectors) NewLog(rank int, base uint64) (logstore.Store, error) {
	path, err := p.path(rank)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("uncoord: protector of rank %d: %w", rank, err)
	}
	return logstore.CreateFile(path, base, logstore.FileOptions{NoSync: p.NoSync})
}

// Lost reports that the log of rank is gone from its protector's
// directory: the protector's node was lost with its cache (an open log
// then writes to a file no one will find again). The rank must
// re-protect (Rank.Reprotect).
func (p FileProtectors) Lost(rank int) (bool, error) {
	path, err := p.path(rank)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return false, err
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

// NodeLoss is what losing whole nodes does to a job's protection: each
// rank's checkpoint copy and log live at its protector's node
// (ProtectorOf, Checkpoints, FileProtectors), its other checkpoint copy
// on its own node.
type NodeLoss struct {
	// Lost are the ranks that lived on a lost node, in rank order: their
	// processes and their own node's checkpoint copies are gone. Those
	// not in Beyond can restart from their protector's copy and log.
	Lost []int
	// Beyond are the ranks of Lost whose protector's node was lost too,
	// or that had no protector (every rank in one failure domain):
	// nothing holds their checkpoint or their log any more. That is
	// beyond what the protection tolerates: only a whole-job restart
	// serves them.
	Beyond []int
	// Unprotected are the surviving ranks whose protector's node was
	// lost, with their log and checkpoint copy: a failure of theirs
	// cannot be served until they re-protect, taking a checkpoint at
	// their new protector (which makes the lost log unnecessary).
	Unprotected []int
	// Protectors is the ring re-formed over the placement after the loss
	// (ProtectorOf over after), for every rank of after that has one;
	// Changed are the ranks of after whose protector is not the one
	// they had (a rank that had none and now has one included): their
	// next checkpoint and log must go to the new one.
	Protectors map[int]int
	Changed    []int
}

// LoseNodes tells what losing the nodes lost does to the protection of
// the ranks placed as before, and re-forms the ring over the placement
// after the loss (after: the surviving ranks where they are, and the
// lost ones where they restart; it may be before without the lost
// ranks).
func LoseNodes(before []placement.Member, lost []string, after []placement.Member) NodeLoss {
	var l NodeLoss
	gone := func(node string) bool { return slices.Contains(lost, node) }
	node := make(map[int]string, len(before))
	for _, m := range before {
		node[m.Rank] = m.Node
	}
	ms := slices.Clone(before)
	slices.SortFunc(ms, func(a, b placement.Member) int { return a.Rank - b.Rank })
	old := make(map[int]int, len(ms))
	for _, m := range ms {
		p, ok := ProtectorOf(before, m.Rank)
		if ok {
			old[m.Rank] = p
		}
		switch {
		case gone(m.Node):
			l.Lost = append(l.Lost, m.Rank)
			if !ok || gone(node[p]) {
				l.Beyond = append(l.Beyond, m.Rank)
			}
		case ok && gone(node[p]):
			l.Unprotected = append(l.Unprotected, m.Rank)
		}
	}
	l.Protectors = make(map[int]int, len(after))
	as := slices.Clone(after)
	slices.SortFunc(as, func(a, b placement.Member) int { return a.Rank - b.Rank })
	for _, m := range as {
		p, ok := ProtectorOf(after, m.Rank)
		if !ok {
			continue
		}
		l.Protectors[m.Rank] = p
		if q, had := old[m.Rank]; !had || q != p {
			l.Changed = append(l.Changed, m.Rank)
		}
	}
	return l
}
