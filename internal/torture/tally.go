package torture

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Event is one line of a job's trace (the examples' --trace), or the end
// of the `ckpt run` process.
type Event struct {
	// Kind is "started" (from scratch), "restored", "checkpoint", "done"
	// (the trace's events) or "exit" (ckpt run ended; Err says how).
	Kind     string
	Step     int64
	Checksum string
	From     string // restored: cache, rebuild or shared
	At       time.Time
	Err      string
}

// Source is where a recovery restored from, as the result's
// "recoveries" names it: cache, rebuild, shared or scratch.
func (e Event) Source() string {
	if e.Kind == "started" {
		return "scratch"
	}
	return e.From
}

// Reference is a failure-free run's state: the checksum at each step it
// started, checkpointed or ended at.
type Reference map[int64]string

// NewReference reads a failure-free run's trace.
func NewReference(events []Event) (Reference, error) {
	ref := Reference{}
	done := false
	for _, e := range events {
		switch e.Kind {
		case "started", "checkpoint", "done":
			ref[e.Step] = e.Checksum
			done = done || e.Kind == "done"
		default:
			return nil, fmt.Errorf("the failure-free run's trace has a %q event at step %d: it was not failure-free", e.Kind, e.Step)
		}
	}
	if !done {
		return nil, fmt.Errorf("the failure-free run's trace has no end (%d events)", len(events))
	}
	return ref, nil
}

// Lost is a count of recoveries that restored an older checkpoint than
// the newest committed, by reason.
type Lost struct {
	Count int            `json:"count"`
	Why   map[string]int `json:"why"`
}

// Seconds is the median and 99th percentile of recovery times.
type Seconds struct {
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
}

// Result is a campaign's account; its JSON is `ckpt torture --json`'s.
type Result struct {
	Seed           uint64         `json:"seed"`
	FaultsInjected int            `json:"faults_injected"`
	Faults         map[Kind]int   `json:"faults"`
	Recoveries     map[string]int `json:"recoveries"`
	// WrongResults counts restored, committed or final states whose
	// checksum differs from the failure-free run's at the same step.
	WrongResults int `json:"wrong_results"`
	// CommittedLostWithinTolerance counts recoveries to an older
	// checkpoint than the newest committed although the damage since was
	// within the redundancy's tolerance (Judge).
	CommittedLostWithinTolerance int              `json:"committed_lost_within_tolerance"`
	LostBeyondTolerance          Lost             `json:"lost_beyond_tolerance"`
	RecoverSeconds               map[Kind]Seconds `json:"recover_seconds"`
	Skipped                      map[Kind]int     `json:"skipped"`             // faults that found nothing to hit (no shared copy yet)
	Unavailable                  map[Kind]string  `json:"unavailable"`         // kinds left out, and why (no sandbox for the network and disk faults)
	UnexpectedRestarts           int              `json:"unexpected_restarts"` // restarts no fault caused (a heartbeat missed on a busy machine)
	Stuck                        int              `json:"stuck"`               // recoveries that did not happen within the recovery timeout
	JobFailures                  int              `json:"job_failures"`        // ckpt run ended without finishing and was started again
	Runs                         int              `json:"runs"`
	RunsFinished                 int              `json:"runs_finished"`
	Unchecked                    int              `json:"unchecked"` // states at a step the reference run has no checksum for
	Workloads                    []string         `json:"workloads"`
	Redundancy                   string           `json:"redundancy"`
	Problems                     []string         `json:"problems"` // one line per wrong result, loss, stuck recovery
	// HostileFailures counts attacks of hostile faults that a listener
	// did not hold, listeners that kept attackers' connections, and
	// restarts during a hostile fault (the job must ride it out).
	HostileFailures int `json:"hostile_failures"`
	// AttacksHeld counts, by kind of listener (coordinator, relay, peer,
	// stage), the attacks of hostile faults the listener held.
	AttacksHeld map[string]int `json:"attacks_held"`
	// AttacksCut counts attacks cut short because their listener's
	// process ended first (a job ends before a staging server's 30s Hello
	// timeout has passed): neither held nor failed.
	AttacksCut int `json:"attacks_cut"`
}

// Failed tells whether the campaign found a bug: a wrong result, a
// committed checkpoint lost within the redundancy's tolerance, or a
// hostile fault a listener or the job did not withstand.
func (r Result) Failed() bool {
	return r.WrongResults > 0 || r.CommittedLostWithinTolerance > 0 || r.HostileFailures > 0
}

// Tally accounts for a campaign, event by event; it does no I/O.
type Tally struct {
	r     Result
	times map[Kind][]float64 // recovery times, seconds
}

// NewTally starts the account of the campaign of seed.
func NewTally(seed uint64) *Tally {
	return &Tally{r: Result{Seed: seed, Faults: map[Kind]int{}, Recoveries: map[string]int{},
		LostBeyondTolerance: Lost{Why: map[string]int{}}, RecoverSeconds: map[Kind]Seconds{},
		Skipped: map[Kind]int{}, Unavailable: map[Kind]string{}, Problems: []string{}, AttacksHeld: map[string]int{}}, times: map[Kind][]float64{}}
}

// Check compares a state the job reported with the reference; it returns
// a problem ("" if none). A state at a step the reference lacks is
// counted unchecked.
func (t *Tally) Check(ref Reference, e Event) string {
	want, ok := ref[e.Step]
	if !ok {
		t.r.Unchecked++
		return ""
	}
	if want != e.Checksum {
		t.r.WrongResults++
		return t.problem(fmt.Sprintf("wrong result: %s state at step %d has checksum %s, the failure-free run's %s", e.Kind, e.Step, e.Checksum, want))
	}
	return ""
}

func (t *Tally) problem(p string) string {
	t.r.Problems = append(t.r.Problems, p)
	return p
}

// Injected counts fault f as injected.
func (t *Tally) Injected(f Fault) {
	t.r.FaultsInjected++
	t.r.Faults[f.Kind]++
}

// Skip counts fault f as skipped: it found nothing to hit.
func (t *Tally) Skip(f Fault) { t.r.Skipped[f.Kind]++ }

// Recovered accounts for the recovery e that followed fault f (nil: no
// fault caused it) injected at at, when the newest committed checkpoint
// was at step committed and the faults since did damage under red. It
// returns a problem ("" if none).
func (t *Tally) Recovered(f *Fault, at time.Time, e Event, committed int64, damage Damage, red Redundancy) string {
	t.r.Recoveries[e.Source()]++
	if f == nil {
		t.r.UnexpectedRestarts++
	} else {
		t.times[f.Kind] = append(t.times[f.Kind], e.At.Sub(at).Seconds())
	}
	if e.Step >= committed {
		return ""
	}
	within, why := Judge(red, damage)
	cause := "a restart no fault caused"
	if f != nil {
		cause = f.String()
	}
	if within {
		t.r.CommittedLostWithinTolerance++
		return t.problem(fmt.Sprintf("committed checkpoint lost within tolerance: after %s the job restored step %d from %s, but step %d was committed", cause, e.Step, e.Source(), committed))
	}
	t.r.LostBeyondTolerance.Count++
	t.r.LostBeyondTolerance.Why[why]++
	return ""
}

// Healed accounts for a fault that forced no restart, which the job rode
// out: at injection, e the job's first checkpoint after it ended.
func (t *Tally) Healed(f Fault, at time.Time, e Event) {
	t.times[f.Kind] = append(t.times[f.Kind], e.At.Sub(at).Seconds())
}

// Attacked accounts for the attacks of hostile fault f; it returns the
// problems (one per failure).
func (t *Tally) Attacked(f Fault, a Attacks) []string {
	for k, n := range a.Held {
		t.r.AttacksHeld[k] += n
	}
	t.r.AttacksCut += a.Cut
	var out []string
	for _, why := range a.Failed {
		t.r.HostileFailures++
		out = append(out, t.problem(fmt.Sprintf("hostile: %s: %s", f, why)))
	}
	return out
}

// HostileRestart counts a restart during hostile fault f, which the job
// should have ridden out.
func (t *Tally) HostileRestart(f Fault) string {
	t.r.HostileFailures++
	return t.problem(fmt.Sprintf("hostile: the job restarted during %s", f))
}

// Stuck counts a job that made no progress for waited after what (a
// fault, or its last event).
func (t *Tally) Stuck(what string, waited time.Duration) string {
	t.r.Stuck++
	return t.problem(fmt.Sprintf("stuck: nothing happened within %s after %s", waited, what))
}

// Run counts a job run started (for workload w) and whether it finished.
func (t *Tally) Run(w string) {
	t.r.Runs++
	for _, x := range t.r.Workloads {
		if x == w {
			return
		}
	}
	t.r.Workloads = append(t.r.Workloads, w)
}

// Finished counts a run that reached its end.
func (t *Tally) Finished() { t.r.RunsFinished++ }

// JobFailed counts a `ckpt run` that ended without finishing.
func (t *Tally) JobFailed(why string) string {
	t.r.JobFailures++
	return t.problem("ckpt run ended without finishing: " + why)
}

// Result is the account so far.
func (t *Tally) Result() Result {
	r := t.r
	r.RecoverSeconds = map[Kind]Seconds{}
	for k, v := range t.times {
		r.RecoverSeconds[k] = Seconds{Median: Quantile(v, 0.5), P99: Quantile(v, 0.99)}
	}
	return r
}

// Quantile is the q-quantile of v by the nearest rank (the smallest value
// at least q of v are not above); 0 for no values.
func Quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(q * float64(len(s))))
	return s[min(max(i, 1), len(s))-1]
}
