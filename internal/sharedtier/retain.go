package sharedtier

// Candidate is a checkpoint as retention sees it: its place in the
// listing and whether a restart could recover it from the tier in
// question (how that is checked is the tier's business: Check here,
// the engine's cache retention for the node caches).
type Candidate struct {
	Name        string
	ID          uint64
	Recoverable bool
}

// Doomed is the retention rule of both tiers: of the checkpoints of a
// listing, newest first, it keeps the keep newest and, beyond them, the
// newest recoverable one, and returns the names of the others, oldest
// last. A run of damaged newer checkpoints therefore never costs the job
// its last good one. keep ≤ 0 keeps everything. It is pure, so that every
// rank deciding for its node's cache decides alike.
func Doomed(list []Candidate, keep int) []string {
	if keep <= 0 {
		return nil
	}
	var out []string
	found := false
	for i, c := range list {
		keepThis := i < keep || (c.Recoverable && !found)
		found = found || c.Recoverable
		if !keepThis {
			out = append(out, c.Name)
		}
	}
	return out
}
