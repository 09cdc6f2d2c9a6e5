package main

import (
	"math"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/launch"
)

// withStaged makes the non-blocking flush counts those the staging servers
// reported: rank 0 publishes its counts as it goes, and a flush the servers
// fail because the attempt is ending (a node lost mid-pull) is failed after
// rank 0 was killed, so its count never reached the summary while the
// progress lines showed it. Per checkpoint, the last outcome counts: failed,
// or durable (committed or durable).
func withStaged(f ckpt.FlushStats, evs []launch.StageEvent) ckpt.FlushStats {
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
		mean = demo.StagedLatency(evs)
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
