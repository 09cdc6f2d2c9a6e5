package uncoord

import (
	"fmt"
	"slices"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// Reprotect moves the rank's log to a new protector after its protector
// was lost with the log (and the checkpoint copy it kept): RADIC's ring
// re-formed after a node loss (ProtectorOf over the placement after it).
// It takes a checkpoint now — save must save the snapshot, with the
// application's state, where a restart finds it, at the new protector
// among them — and then starts a new log there, open(base) (its first
// record base+1), holding nothing behind the checkpoint: the lost log is
// no longer needed. While it runs, no message is logged or delivered, so
// that no record can fall between the snapshot and the new log: the
// records already on their way to the old log go to the new one.
//
// Until Reprotect returns, a failure of the rank cannot be served (its
// log is gone): the runtime falls back to a whole-job restart, as when
// any log cannot serve. On an error nothing is swapped. The old log is
// closed.
func (r *Rank) Reprotect(open func(base uint64) (logstore.Store, error), save func(Snapshot) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.storeMu.Lock()
	snap := Snapshot{Point: r.recv.Point(), Sender: r.send.State(), Pending: slices.Clone(r.delivered)}
	err := save(snap)
	var log logstore.Store
	if err == nil {
		log, err = open(snap.Point.Index)
	}
	if err == nil && len(r.appending) > 0 {
		// Not yet delivered, so after the snapshot's point; the old
		// log may have them (or not yet), the new one must.
		if err = log.Append(r.appending); err != nil {
			log.Close()
		}
	}
	if err != nil {
		r.storeMu.Unlock()
		return fmt.Errorf("uncoord: rank %d: re-protecting: %w", r.cfg.Rank, err)
	}
	old := r.cfg.Log
	r.cfg.Log = log
	r.logGen++
	r.storeMu.Unlock()
	old.Close()
	// The receiver's truncation point: the new log's base already.
	r.apply(r.recv.Protected(snap.Point))
	return r.err
}
