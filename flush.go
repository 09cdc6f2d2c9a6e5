package ckpt

import (
	"github.com/ckpt/ckpt/flushstats"
	"github.com/ckpt/ckpt/internal/flush"
)

// A Job flushes every K-th checkpoint to the shared tier (JobOptions'
// FlushEvery and FlushAuto), blocking (the ranks copy their files
// themselves and the checkpoint returns when they are durable) or
// non-blocking (Sato et al. 2012: with Staging, a staging server pulls the
// checkpoint while the application computes).

// Flush busy policies: what a non-blocking flush that falls due does while
// the previous one still runs.
const (
	FlushSkip = flush.Skip // skip this flush; the next due one goes
	FlushWait = flush.Wait // wait for the previous one, then announce
)

// FlushStats count what a job's flushes did in this launch, as rank 0 saw
// them (package flushstats has their fields, methods and JSON form, which
// the launcher reads).
type FlushStats = flushstats.Stats
