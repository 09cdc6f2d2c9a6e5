package flush

import (
	"slices"
	"time"
)

// States is what a transfer knows of the flushes it started.
type States interface {
	State(name string) (st State, reason string, ok bool)
	Latency(name string) (time.Duration, bool)
}

// Tracker follows the flushes a node announced until they finish. A flush
// counts as durable once the node's part is (with several staging servers,
// the server that commits the checkpoint tells only its own nodes), and is
// followed further: if another node's part then fails, the server fails
// the whole flush, and it counts as failed instead.
type Tracker struct {
	names     []string           // announced, not yet seen committed or failed
	durableAt map[string]float64 // latency counted for a name seen durable
}

// Add follows checkpoint name's flush.
func (t *Tracker) Add(name string) { t.names = append(t.names, name) }

// Refresh counts into f the followed flushes that finished since.
func (t *Tracker) Refresh(states States, f *Stats) {
	t.names = slices.DeleteFunc(t.names, func(name string) bool {
		st, reason, ok := states.State(name)
		lat, counted := t.durableAt[name]
		switch {
		case !ok:
			delete(t.durableAt, name)
			return true
		case st == Failed:
			if counted {
				f.Durable--
				f.Latency -= lat
			}
			f.Failed++
			f.LastFailure = reason
			delete(t.durableAt, name)
			return true
		case st == Pending:
			return false
		}
		// Durable or Committed.
		if !counted {
			d, _ := states.Latency(name)
			f.Durable++
			f.Latency += d.Seconds()
			if t.durableAt == nil {
				t.durableAt = map[string]float64{}
			}
			t.durableAt[name] = d.Seconds()
		}
		if st == Committed {
			delete(t.durableAt, name)
			return true
		}
		return false
	})
}
