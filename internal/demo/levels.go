package demo

import (
	"math"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

// Reference is the failure-free reference the demo's runs are measured
// against: the same job without failures or checkpoints, run once before
// the runs with failures and once after them, in every mode of the demo.
// Both are wall-clock seconds from the launch to the end, as the runs are
// measured.
type Reference struct {
	Before, After float64
	// Once: only the reference before the runs was taken (`ckpt demo
	// --references 1`, for campaigns whose figures of record are against
	// the work measured in the run); Work is then Before alone.
	Once bool
}

// Work is the failure-free work the efficiency divides: the mean of the
// two references. The job's speed on a shared machine drifts by a third
// from minute to minute (the references of one quiet session ran
// 1500 Himeno iterations at 122 to 225 a second), so one reference at one
// end of the runs measured the machine of that moment, not the work: the
// flushing demo took it before both runs, the plain demo after its run,
// and a failure-free non-blocking run came out faster than the work
// alone. The mean of the two ends cancels a drift that is linear over the
// runs, and is the same measure in both modes. NaN unless both are > 0
// (with Once, unless Before is).
func (r Reference) Work() float64 {
	if r.Once {
		if !(r.Before > 0) {
			return math.NaN()
		}
		return r.Before
	}
	if !(r.Before > 0) || !(r.After > 0) {
		return math.NaN()
	}
	return (r.Before + r.After) / 2
}

// Efficiency is the work over a run's time (NaN without either).
func Efficiency(work, run float64) float64 {
	if !(work > 0) || !(run > 0) {
		return math.NaN()
	}
	return work / run
}

// RelErr is measured's relative error against model: measured / model − 1
// (NaN if either is not a positive number).
func RelErr(measured, model float64) float64 {
	if !(measured > 0) || !(model > 0) {
		return math.NaN()
	}
	return (measured - model) / model
}

// Levels is the failure process a run met, split by the checkpoint level
// that recovered from it: the failure levels of the multi-level Markov
// model (Moody et al. 2010; SPEC-markov §1), on the injector's clock (the
// job's wall clock from its first launch to its end). Level 2 are the
// failures the node-local level (the caches with XOR across the nodes)
// did not survive: a second node of a set lost before the first was
// rebuilt. The run shows them as relaunches that restored from the shared
// tier, or that started from scratch although a checkpoint had been
// committed since the job last started from scratch
// (launch.Accounting.ScratchUnrecoverable): each is one level-2
// event. Every other injected failure is of level 1, including those
// before the first checkpoint, which both models already count (they roll
// back to the start, the checkpoint of every level: docs/MODELS.md).
type Levels struct {
	Level2 int // level-2 events
	// The MTTI of each level's failures as applied: elapsed / count
	// (level 1: the failures injected less the level-2 events); +Inf
	// without one. Together they give the applied MTTI of Applied.
	Level1MTTI, Level2MTTI float64
}

// Level2Events counts a run's level-2 events in its failure account.
func Level2Events(acc launch.Accounting) int {
	return acc.BySource["shared"] + acc.ScratchUnrecoverable
}

// AppliedLevels splits the failures injected into a run that lasted
// elapsed seconds on the injector's clock by level, with acc the run's
// failure account: λ2 = (level-2 events) / elapsed, λ1 = (injected −
// level-2 events) / elapsed, so that λ1 + λ2 is the applied rate
// injected / elapsed. A level-2 event ends a level-1 failure's restart
// (the second node of a set), so it takes that failure's place rather
// than adding one.
func AppliedLevels(elapsed float64, injected int, acc launch.Accounting) Levels {
	n2 := Level2Events(acc)
	n1 := max(injected-n2, 0)
	mtti := func(n int) float64 {
		if n == 0 || !(elapsed > 0) {
			return math.Inf(1)
		}
		return elapsed / float64(n)
	}
	return Levels{Level2: n2, Level1MTTI: mtti(n1), Level2MTTI: mtti(n2)}
}

// MultilevelPlain is the blocking two-level Markov model (Moody et al.
// 2010; SPEC-markov §4) of a run of the plain demo at the failures it met
// by level. Level 1 is the caches with XOR, checkpointed every interval τ
// of computation at cost δ. The plain demo has no shared tier, so level 2
// is the job's start, the one state a failure the caches do not survive
// goes back to: the whole job is one period of n = max(1, round(work/τ))
// intervals. Its last checkpoint is the period's level-2 one, at δ like
// the others (the model charges one checkpoint more than the run takes,
// at its end). Both levels restart in the recovery R measured from the
// failures (MeanRecovery). With no level-2 event this is the Markov
// model with λ2 = 0, beside Daly's eq. 1; without any failure it is the
// failure-free τ/(τ + δ) (the model needs a failure rate > 0). NaN
// without τ, δ and the work > 0, or a recovery ≥ 0 when there were
// failures.
func MultilevelPlain(interval, cost, recovery, work float64, lv Levels) float64 {
	if !(interval > 0) || !(cost > 0) || !(work > 0) {
		return math.NaN()
	}
	if math.IsInf(lv.Level1MTTI, 1) && math.IsInf(lv.Level2MTTI, 1) {
		return interval / (interval + cost)
	}
	if !(recovery >= 0) {
		return math.NaN()
	}
	n := max(1, int(math.Round(work/interval)))
	m := policy.Measured{Interval: interval, Level1Cost: cost, Restart: recovery,
		Level1MTTI: lv.Level1MTTI, Level2MTTI: lv.Level2MTTI}
	res, err := evaluate(m, true, model.Schedule{Interval: interval, Counts: []int{n - 1}})
	if err != nil {
		return math.NaN()
	}
	return res.Efficiency
}

// CompareMarkovLevels is CompareMarkovApplied with the failures split by
// level (lv): the level-2 events at their applied rate, rolling back to
// the last checkpoint on the shared tier, the rest at level 1. With no
// level-2 event it is CompareMarkovApplied.
func CompareMarkovLevels(nonblocking bool, s Settings, lv Levels, f flush.Stats, staged []launch.StageEvent, attempts []launch.Attempt) Markov {
	return compareMarkov(nonblocking, s, lv.Level1MTTI, lv.Level2MTTI, true, f, staged, MeanRecovery(attempts))
}

// evaluate is m.Evaluate; with retry, a level-1 failure during a level-1
// restart retries it instead of escalating to level 2 (Moody et al.'s
// rule, SPEC-markov §4.3). The models by level take it: the run's own
// level-2 events, at their rate λ2, are the failures during a restart
// that did cost the caches, so escalating more of them would count those
// twice.
func evaluate(m policy.Measured, retry bool, s model.Schedule) (model.MultilevelResult, error) {
	if !retry {
		return m.Evaluate(s)
	}
	return model.Scheme{Levels: m.Levels(), NonBlocking: m.NonBlocking, FlushLatency: m.FlushCost, Alpha: m.ModelAlpha(),
		Options: model.BlockingOptions{RetryRecovery: true}}.Evaluate(s)
}

// Level2Probability is the probability that a node failure becomes a
// level-2 event: that, before the lost node's files are rebuilt (within
// window seconds of the failure: the recovery R from the failure to the
// restored state, recovery_seconds), another node of its XOR set fails
// too. XOR withstands node failures as long as two nodes of one set do not
// fail together (Sato et al. 2012, §III); the models take failures as a
// Poisson process of rate λ at all times, restarts included, each of level
// i with probability λi/λ (Sato et al. 2012, §V; SPEC-markov §1), so this
// probability is λ2/λ.
//
// The injector draws node failures at rate λ = rate, each on a node drawn
// uniformly from the nodes (internal/inject, Schedule.Next). A failure in
// the window strikes another node of the set with probability a =
// (set − 1)/nodes, and is then the level-2 event; otherwise (the node
// being rebuilt, or a node of another set) it ends the relaunch too, and
// the window starts again from it. With q = 1 − e^(−λw), the chance that
// the window meets a failure at all,
//
//	p = a·q + (1 − a)·q·p  ⇒  p = a·q / (1 − (1 − a)·q),
//
// about a·λw for λw ≪ 1. With nodes > set, a failure of another set opens
// a window of that set as well, which this leaves out (second order in
// λw; the demo has one set of all its nodes). NaN unless rate ≥ 0,
// window ≥ 0, set ≥ 2 and nodes ≥ set.
func Level2Probability(rate, window float64, set, nodes int) float64 {
	if !(rate >= 0) || !(window >= 0) || math.IsInf(rate*window, 1) || set < 2 || nodes < set {
		return math.NaN()
	}
	a := float64(set-1) / float64(nodes)
	q := -math.Expm1(-rate * window)
	return a * q / (1 - (1-a)*q)
}

// Predicted is the failure process of a run split by level as the node
// failures imply it (Level2Probability), where Levels counts the level-2
// events the run met: the model's λ2 from the failure process and the
// XOR layout, not from the run's outcome.
type Predicted struct {
	// Probability is Level2Probability at the applied rate and the
	// run's recovery.
	Probability float64
	// Level2Expected is the level-2 events the run should have met:
	// failures injected × Probability.
	Level2Expected float64
	// Levels has the levels' MTTIs: λ2 = λ·p, λ1 = λ·(1 − p), λ =
	// injected / elapsed, the applied rate of Applied (so λ1 + λ2 is
	// the same total rate as the other comparisons at the failures met).
	// Its Level2 is 0: nothing was counted.
	Levels Levels
}

// PredictLevels is Predicted for a run that lasted elapsed seconds on the
// injector's clock and met injected failures, each rebuilt within window
// seconds (the run's mean recovery), with XOR sets of set nodes among
// nodes. Without a failure both MTTIs are +Inf (the failure-free model);
// NaN MTTIs when p is NaN.
func PredictLevels(elapsed float64, injected int, window float64, set, nodes int) Predicted {
	inf := math.Inf(1)
	if injected == 0 || !(elapsed > 0) {
		return Predicted{Probability: Level2Probability(0, max(window, 0), set, nodes), Levels: Levels{Level1MTTI: inf, Level2MTTI: inf}}
	}
	rate := float64(injected) / elapsed
	p := Level2Probability(rate, window, set, nodes)
	if math.IsNaN(p) {
		return Predicted{Probability: p, Level2Expected: p, Levels: Levels{Level1MTTI: p, Level2MTTI: p}}
	}
	mtti := func(r float64) float64 {
		if r == 0 {
			return inf
		}
		return 1 / r
	}
	return Predicted{Probability: p, Level2Expected: float64(injected) * p,
		Levels: Levels{Level1MTTI: mtti(rate * (1 - p)), Level2MTTI: mtti(rate * p)}}
}
