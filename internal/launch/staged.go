package launch

import (
	"math"

	"github.com/ckpt/ckpt/flushstats"
)

// WithStaged makes the non-blocking flush counts those the staging servers
// reported: rank 0 publishes its counts as it goes, and a flush the servers
// fail because the attempt is ending (a node lost mid-pull) is failed after
// rank 0 was killed, so its count never reached the summary while the
// progress lines showed it. Per checkpoint, the last outcome counts: failed,
// or durable (committed or durable).
func WithStaged(f flushstats.Stats, evs []StageEvent) flushstats.Stats {
	if f.Mode != "nonblocking" {
		return f
	}
	outcome := map[string]string{}
	for _, e := range evs {
		switch e.State {
		case "failed":
			outcome[e.Name] = "failed"
			f.LastFailure = e.Reason
		case "committed":
			outcome[e.Name] = "durable"
		case "durable":
			if outcome[e.Name] == "" {
				outcome[e.Name] = "durable"
			}
		}
	}
	// The mean latency stays rank 0's (the servers' if rank 0 saw none
	// finish) over the recounted flushes.
	mean := f.MeanLatency()
	if math.IsNaN(mean) {
		mean = StagedLatency(evs)
	}
	f.Durable, f.Failed, f.Latency = 0, 0, 0
	for _, o := range outcome {
		if o == "failed" {
			f.Failed++
		} else {
			f.Durable++
		}
	}
	if f.Durable > 0 {
		f.Latency = mean * float64(f.Durable)
	}
	// What the servers finished was announced, and due: rank 0's last
	// counts may have been lost with it.
	f.Started = max(f.Started, f.Durable+f.Failed)
	f.Due = max(f.Due, f.Started+f.Skipped)
	return f
}

// StagedLatency is the mean time the staging servers took per flush, from
// its announcement to its commit (NaN if none finished): ℓ2 as measured.
func StagedLatency(evs []StageEvent) float64 {
	var sum float64
	n := 0
	for _, e := range evs {
		if e.State == "committed" || e.State == "durable" {
			sum += e.Seconds
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
