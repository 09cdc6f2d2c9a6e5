package flush

import "github.com/ckpt/ckpt/flushstats"

// Stats are the statistics the Scheduler keeps: the public
// flushstats.Stats, the one definition (ckpt.FlushStats and
// jobenv.FlushStats are the same type).
type Stats = flushstats.Stats

// Mode values of Stats.
const (
	ModeBlocking    = flushstats.ModeBlocking
	ModeNonBlocking = flushstats.ModeNonBlocking
)
