package launch

import "github.com/ckpt/ckpt/internal/report"

// FlushReport is the "flush" object of `ckpt run --json` and `ckpt demo
// --flush ... --json`: what the job's flushes to the shared tier did
// (Report.Flush, jobenv.FlushStats summed over the attempts) with the
// means derived from it, in seconds. `ckpt model multilevel --alpha-from`
// reads AlphaMeasured back with this type. A mean of nothing is null.
type FlushReport struct {
	Mode                string       `json:"mode"` // blocking, nonblocking, or none without a shared tier
	Due                 int          `json:"due"`
	Started             int          `json:"started"`
	Skipped             int          `json:"skipped"`
	Durable             int          `json:"durable"`
	Failed              int          `json:"failed"`
	BlockingSecondsEach report.Float `json:"blocking_seconds_each"`
	LatencySecondsEach  report.Float `json:"latency_seconds_each"`
	WaitedSeconds       report.Float `json:"waited_seconds"`
	// AlphaMeasured is the overhead factor α: the steps' slowdown while a
	// flush ran. A pointer, so that a report read back without it, or
	// with null (not measured), has nil rather than an α of 0.
	AlphaMeasured   *report.Float `json:"alpha_measured"`
	StagingRestarts int           `json:"staging_restarts"`
	K               int           `json:"k"`
	KError          string        `json:"k_error"`
	LastFailure     string        `json:"last_failure"`
}
