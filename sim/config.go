package sim

import (
	"fmt"
	"math"

	"github.com/ckpt/ckpt/model"
)

// Strategy is how the simulated job checkpoints and recovers.
type Strategy uint8

const (
	// Coordinated is blocking checkpointing at one or more levels: the rules
	// of SPEC-markov §4.3 (Moody et al.); one level is Daly's setting.
	Coordinated Strategy = iota
	// NonBlocking is the two-level scheme of SPEC-markov §5 (001 §V): the
	// checkpoint closing each period is flushed to the top level in the
	// background.
	NonBlocking
	// Uncoordinated is uncoordinated checkpointing with pessimistic
	// receiver-based message logging (003 §3.2): only the failed process
	// rolls back; the processes that depend on it wait for it.
	Uncoordinated
)

func (s Strategy) String() string {
	switch s {
	case Coordinated:
		return "coordinated"
	case NonBlocking:
		return "nonblocking"
	case Uncoordinated:
		return "uncoordinated"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Dist is the distribution of the times between two failures of one
// category. Its mean is always the category's 1/rate. Shape is the Weibull
// shape k; 0 (the zero value) and 1 mean exponential, which makes each
// category a Poisson process.
type Dist struct {
	Shape float64
}

// Weibull reports whether the distribution is a Weibull of shape ≠ 1.
func (d Dist) Weibull() bool { return d.Shape != 0 && d.Shape != 1 }

func (d Dist) String() string {
	if !d.Weibull() {
		return "exp"
	}
	return fmt.Sprintf("weibull:%g", d.Shape)
}

// scale is the Weibull scale λ giving mean m: m/Γ(1+1/k).
func (d Dist) scale(mean float64) float64 {
	if !d.Weibull() {
		return mean
	}
	return mean / math.Gamma(1+1/d.Shape)
}

func (d Dist) validate() error {
	k := d.Shape
	if k == 0 {
		return nil
	}
	if !(k > 0) || math.IsInf(k, 0) || math.IsInf(math.Gamma(1+2/k), 0) {
		return &model.ParamError{Param: "dist", Value: k, Reason: "the Weibull shape must be a finite number > 0 (and above about 0.012, where its moments overflow)"}
	}
	return nil
}

// Config describes one simulated job. Times are seconds, rates per second.
//
// Levels and Schedule are those of the Markov models (model.Levels,
// model.Schedule): Rates[i-1] is the rate of failures that need a level-i
// checkpoint, Cost and Restart the level's checkpoint and recovery times,
// Interval the compute time between checkpoints and Counts the v_i. The
// Uncoordinated strategy has one level: Rates[0] is the failure rate of the
// whole application (1/α of 003), Cost[0] t_c, Restart[0] t_l, Interval σ.
type Config struct {
	Strategy Strategy
	// Work is the failure-free, checkpoint-free compute time of the job
	// (T_s). The job is cut into ⌈Work/Interval⌉ intervals, the last one
	// shorter if Work is not a multiple; every interval, the last included,
	// ends with the checkpoint the schedule gives it.
	Work float64
	model.Levels
	model.Schedule
	// Detect is the failure detection latency t_d, added to every recovery
	// attempt.
	Detect float64
	// Dist is the distribution of the times between failures.
	Dist Dist

	// L1ProtectedFirst selects the SPEC-markov §4.4 variant (Coordinated,
	// two levels): a level-1 failure always recovers at cost r_1, also in
	// the first interval after a level-2 checkpoint.
	L1ProtectedFirst bool

	// FlushLatency is ℓ_2, the duration of the background copy, and Alpha
	// the slowdown α of computation while it runs (NonBlocking). The second
	// Cost entry is the blocking part of a level-2 checkpoint.
	FlushLatency, Alpha float64

	// Dependents[n] lists the processes that wait for process n when it
	// fails (Uncoordinated). Its length is the number of processes N; P(n)
	// of 003 eq. 12 is 1 + len(Dependents[n]). See DependentsFromP.
	Dependents [][]int
	// LogOverhead is κ, the time pessimistic receiver-based logging adds
	// per second of computation executed for the first time (Uncoordinated;
	// re-executed work reads its messages from the log and pays nothing).
	// LogOverheadFor converts 003's Δ_lp into κ.
	LogOverhead float64
	// LogReplay is Δ_lr, the time to process the message log after a
	// failure (Uncoordinated), added to every recovery attempt.
	LogReplay float64
}

// maxIntervals bounds the intervals of a job: a replication must end.
const maxIntervals = 1 << 50

// Validate checks the configuration. Errors are *model.ParamError naming the
// quantity as the command line does ("work", "interval", "counts", ...).
func (c Config) Validate() error {
	if err := positive("work", c.Work); err != nil {
		return err
	}
	if c.Strategy == Uncoordinated && c.L() != 1 {
		return &model.ParamError{Param: "rates", Value: float64(c.L()), Reason: "uncoordinated checkpointing has one level: give the failure rate of the whole application"}
	}
	if err := c.Levels.Validate(); err != nil {
		return err
	}
	if err := positive("interval", c.Interval); err != nil {
		return err
	}
	if n := c.Work / c.Interval; n > maxIntervals {
		return &model.ParamError{Param: "work", Value: c.Work, Reason: fmt.Sprintf("is %.3g intervals; at most 2^50 are supported", n)}
	}
	if len(c.Counts) != c.L()-1 {
		return &model.ParamError{Param: "counts", Value: math.NaN(), Reason: fmt.Sprintf("needs %d entries (one per level below the top) for %d levels", c.L()-1, c.L())}
	}
	n := 1.0
	for _, v := range c.Counts {
		if v < 0 {
			return &model.ParamError{Param: "counts", Value: float64(v), Reason: "must be ≥ 0"}
		}
		n *= float64(v) + 1
	}
	if n > 1<<30 {
		return &model.ParamError{Param: "counts", Value: n, Reason: "gives more than 2^30 intervals per period"}
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"detect", c.Detect}, {"flush-latency", c.FlushLatency}, {"alpha", c.Alpha}, {"log-overhead", c.LogOverhead}, {"log-replay", c.LogReplay}} {
		if !finite(q.v) || q.v < 0 {
			return &model.ParamError{Param: q.name, Value: q.v, Reason: "must be a finite number ≥ 0"}
		}
	}
	if err := c.Dist.validate(); err != nil {
		return err
	}
	if c.L1ProtectedFirst && (c.Strategy != Coordinated || c.L() != 2) {
		return &model.ParamError{Param: "variant", Value: math.NaN(), Reason: "the L1-protected variant is defined for two blocking levels"}
	}
	switch c.Strategy {
	case Coordinated:
	case NonBlocking:
		nb := c.nonBlocking()
		if err := nb.Validate(); err != nil {
			return err
		}
		if m, segs := nb.IncompleteSegments(c.Interval), c.Segments(); m > segs {
			return fmt.Errorf("%w: the background copy (flush-latency %g s) spans %d segments but a period has only %d", model.ErrInfeasible, c.FlushLatency, m, segs)
		}
	case Uncoordinated:
		if len(c.Dependents) == 0 {
			return &model.ParamError{Param: "deps", Value: 0, Reason: "give the dependents of each process (one entry per process)"}
		}
		N := len(c.Dependents)
		for n, ds := range c.Dependents {
			seen := map[int]bool{}
			for _, d := range ds {
				if d < 0 || d >= N || d == n || seen[d] {
					return &model.ParamError{Param: "deps", Value: float64(d), Reason: fmt.Sprintf("process %d: a dependent must be another process in [0, %d), listed once", n, N)}
				}
				seen[d] = true
			}
		}
	default:
		return &model.ParamError{Param: "strategy", Value: float64(c.Strategy), Reason: "unknown strategy"}
	}
	if c.Strategy != NonBlocking && (c.FlushLatency != 0 || c.Alpha != 0) {
		name := "flush-latency"
		if c.FlushLatency == 0 {
			name = "alpha"
		}
		return &model.ParamError{Param: name, Value: math.NaN(), Reason: "only used by the non-blocking strategy"}
	}
	return nil
}

func (c Config) nonBlocking() model.NonBlocking {
	return model.NonBlocking{Levels: c.Levels, FlushLatency: c.FlushLatency, Alpha: c.Alpha}
}

// intervals is the number of intervals of the job and the work of the last.
func (c Config) intervals() (k int64, last float64) {
	k = max(1, int64(math.Ceil(c.Work/c.Interval)))
	last = c.Work - float64(k-1)*c.Interval
	if k > 1 && last <= 1e-9*c.Interval {
		// Work is a multiple of Interval up to rounding: no sliver of an
		// interval at the end.
		k--
		last = c.Work - float64(k-1)*c.Interval
	}
	if last <= 0 || last > c.Interval {
		last = c.Interval
	}
	return k, last
}

// DependentsFromP builds a dependency structure with the given P(n) (003
// eq. 12: the number of processes that depend on process n, itself
// included): the P(n)−1 processes after n, cyclically, wait for n. Each
// P(n) must lie in [1, len(p)]. Only P(n) matters for 003's model; the
// choice of the dependents matters to the simulation only through waits
// that overlap.
func DependentsFromP(p []int) ([][]int, error) {
	if _, err := model.Phi(p); err != nil {
		return nil, err
	}
	N := len(p)
	out := make([][]int, N)
	for n, pn := range p {
		out[n] = make([]int, pn-1)
		for i := range out[n] {
			out[n][i] = (n + 1 + i) % N
		}
	}
	return out, nil
}

// DependentsFromGraph builds the dependency structure of a graph file
// (model.DependencyGraph): processes are numbered in g.Processes order and
// the dependents of n are the processes that wait for n directly.
func DependentsFromGraph(g model.DependencyGraph) [][]int {
	index := make(map[string]int, len(g.Processes))
	for i, p := range g.Processes {
		index[p] = i
	}
	out := make([][]int, len(g.Processes))
	seen := map[[2]int]bool{}
	for _, waiter := range g.Processes {
		for _, target := range g.Waits[waiter] {
			w, t := index[waiter], index[target]
			if w == t || seen[[2]int{t, w}] {
				continue
			}
			seen[[2]int{t, w}] = true
			out[t] = append(out[t], w)
		}
	}
	return out
}

// UniformP returns N entries P(n) whose sum is φN² rounded to a whole
// number, spread as evenly as possible (each ⌊φN⌋ or ⌈φN⌉), so that
// model.Phi of the result is φ to within 1/(2N²).
func UniformP(phi float64, n int) ([]int, error) {
	if err := model.ValidatePhi(phi); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, &model.ParamError{Param: "procs", Value: float64(n), Reason: "must be ≥ 1"}
	}
	total := int(math.Round(phi * float64(n) * float64(n)))
	total = max(n, min(total, n*n))
	p := make([]int, n)
	for i := range p {
		p[i] = total / n
		if i < total%n {
			p[i]++
		}
	}
	return p, nil
}

// LogOverheadFor converts 003's message-logging protection cost Δ_lp (the
// logging time of one process per MTTI window α, in.LogProtect) into the
// simulator's κ, the logging time per second of first-time computation.
// By 003's own accounting a window holds α − Overhead seconds of useful
// work, Overhead being eq. 10 at the interval sigma, so
//
//	κ = Δ_lp / (α − Overhead(σ)).
//
// It returns an error when the overhead fills the window.
func LogOverheadFor(in model.IntervalInput, sigma float64) (float64, error) {
	if in.LogProtect == 0 {
		return 0, nil
	}
	useful := in.MTTI - model.FialhoParallelOverhead(sigma, in)
	if !(useful > 0) {
		return 0, &model.ParamError{Param: "log-protect", Value: in.LogProtect, Reason: fmt.Sprintf("Fialho et al. 2011, eq. 10 gives an overhead of %g s per window of %g s: no time is left to work", in.MTTI-useful, in.MTTI)}
	}
	return in.LogProtect / useful, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func positive(name string, v float64) error {
	if !finite(v) || v <= 0 {
		return &model.ParamError{Param: name, Value: v, Reason: "must be a finite number > 0"}
	}
	return nil
}
