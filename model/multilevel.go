package model

import (
	"fmt"
	"math"
)

// Levels describes the checkpoint levels of a multi-level scheme, cheapest
// (level 1, node-local) first and most resilient (the shared tier) last, as in
// SPEC-markov §1. All slices have one entry per level.
type Levels struct {
	// Rates[i-1] is λ_i, the rate (per second) of failures of level exactly i:
	// recoverable from a level-i checkpoint but from no lower one.
	Rates []float64
	// Cost[i-1] is c_i, the time the application is blocked writing a level-i checkpoint.
	Cost []float64
	// Restart[i-1] is r_i, the time to recover from a level-i checkpoint.
	Restart []float64
}

// L is the number of levels.
func (lv Levels) L() int { return len(lv.Rates) }

func (lv Levels) total() float64 {
	s := 0.0
	for _, r := range lv.Rates {
		s += r
	}
	return s
}

// Validate checks the lengths and ranges of the level description.
func (lv Levels) Validate() error {
	if err := lv.validateShape(); err != nil {
		return err
	}
	if lv.total() <= 0 {
		return &ParamError{Param: "rates", Value: lv.total(), Reason: "the total failure rate must be > 0"}
	}
	return nil
}

// validateShape is Validate without the total rate > 0: the lengths, and
// every entry's range.
func (lv Levels) validateShape() error {
	n := len(lv.Rates)
	if n == 0 {
		return &ParamError{Param: "rates", Value: 0, Reason: "at least one level is needed"}
	}
	if n > MaxLevels {
		return &ParamError{Param: "rates", Value: float64(n), Reason: fmt.Sprintf("at most %d levels are supported", MaxLevels)}
	}
	if len(lv.Cost) != n {
		return &ParamError{Param: "cost", Value: math.NaN(), Reason: fmt.Sprintf("has %d entries but rates has %d", len(lv.Cost), n)}
	}
	if len(lv.Restart) != n {
		return &ParamError{Param: "restart", Value: math.NaN(), Reason: fmt.Sprintf("has %d entries but rates has %d", len(lv.Restart), n)}
	}
	for i := 0; i < n; i++ {
		if err := nonNegative("rates", lv.Rates[i]); err != nil {
			return err
		}
		if err := positive("cost", lv.Cost[i]); err != nil {
			return err
		}
		if err := nonNegative("restart", lv.Restart[i]); err != nil {
			return err
		}
	}
	return nil
}

// Schedule is a periodic multi-level checkpoint schedule: compute Interval
// seconds between consecutive checkpoints, and Counts[i-1] = v_i level-i
// checkpoints between two consecutive level-(i+1) checkpoints (L-1 entries).
type Schedule struct {
	Interval float64
	Counts   []int
}

// maxSegments bounds the intervals per period of a schedule.
const maxSegments = 1 << 30

// Segments is the number of intervals in a top-level period, N = Π(v_i+1).
// It is meaningful for validated schedules (at most 2^30 intervals).
func (s Schedule) Segments() int {
	n := 1
	for _, v := range s.Counts {
		n *= v + 1
	}
	return n
}

// MultilevelResult is the expected behaviour of one schedule.
type MultilevelResult struct {
	Schedule
	// Efficiency is ideal time / expected time: N·t over the expected period.
	Efficiency float64
	// PeriodSeconds is the expected wall-clock time of one top-level period.
	PeriodSeconds float64
	// Incomplete is m, the number of segments a background copy spans
	// (non-blocking model only; 0 otherwise).
	Incomplete int
}

func (s Schedule) validate(levels int) error {
	if err := positive("interval", s.Interval); err != nil {
		return err
	}
	if len(s.Counts) != levels-1 {
		return &ParamError{Param: "counts", Value: math.NaN(), Reason: fmt.Sprintf("needs %d entries (one per level below the top) for %d levels", levels-1, levels)}
	}
	n := 1.0 // Π(v_i+1) in floating point: the int product could wrap
	for _, v := range s.Counts {
		if v < 0 {
			return &ParamError{Param: "counts", Value: float64(v), Reason: "must be ≥ 0"}
		}
		n *= float64(v) + 1
	}
	if n > maxSegments {
		return &ParamError{Param: "counts", Value: n, Reason: fmt.Sprintf("gives %g intervals per period; at most %d are supported", n, maxSegments)}
	}
	return nil
}

// BlockingOptions select variants of the blocking model.
type BlockingOptions struct {
	// L1ProtectedFirst protects the first interval after a level-2 checkpoint
	// at level 1 (SPEC-markov §4.4 variant; two levels only). It is not
	// Moody's model but the convention of the non-blocking model.
	L1ProtectedFirst bool
	// RetryRecovery retries a level-k recovery after a failure of level k
	// during it, where Moody's model escalates it to level k+1 (SPEC-markov
	// §4.3). That is the model of a job whose failures during a recovery
	// are counted at the higher level only when they really were, at a
	// rate λ_{k+1} measured apart (the demo's level-2 failures:
	// internal/demo). It applies to the non-blocking model too
	// (NonBlocking.RetryRecovery).
	RetryRecovery bool
}

// Blocking evaluates Moody et al.'s blocking multi-level model
// (SPEC-markov §4) for one schedule.
func Blocking(lv Levels, s Schedule, opt BlockingOptions) (MultilevelResult, error) {
	if err := lv.Validate(); err != nil {
		return MultilevelResult{}, err
	}
	if err := s.validate(lv.L()); err != nil {
		return MultilevelResult{}, err
	}
	if opt.L1ProtectedFirst && lv.L() != 2 {
		return MultilevelResult{}, &ParamError{Param: "rates", Value: float64(lv.L()), Reason: "the L1-protected variant is defined for two levels"}
	}
	return blocking(lv, s, opt), nil
}

// blocking is Blocking without validation, for the optimizer's inner loop.
func blocking(lv Levels, s Schedule, opt BlockingOptions) MultilevelResult {
	m := blockingModel{lv: lv, t: s.Interval, v: s.Counts, total: lv.total(), l1first: opt.L1ProtectedFirst, retry: opt.RetryRecovery}
	L := lv.L()
	period := wrap(m.u(L, L), L, lv.Restart[L-1], lv.Rates, m.total)
	n := s.Segments()
	res := MultilevelResult{Schedule: s, PeriodSeconds: period.a[0]}
	if math.IsNaN(res.PeriodSeconds) || math.IsInf(res.PeriodSeconds, 0) {
		res.PeriodSeconds = math.Inf(1)
	}
	res.Efficiency = float64(n) * s.Interval / res.PeriodSeconds
	return res
}

// blockingModel evaluates the recursion of SPEC-markov §4.2.
type blockingModel struct {
	lv      Levels
	t       float64
	v       []int
	total   float64
	l1first bool
	retry   bool // BlockingOptions.RetryRecovery
}

// u is U(k, c): the stretch between two level-≥k checkpoints that ends with a
// level-c checkpoint, unprotected at level k.
func (m *blockingModel) u(k, c int) block {
	if k == 1 {
		return seg(m.t+m.lv.Cost[c-1], m.lv.Rates, m.total)
	}
	v := m.v[k-2] // v_{k-1}
	if v == 0 {
		if m.l1first && k == 2 {
			// Variant: for v = 0 the period is W2 = wrap(S2, 1).
			return m.p(1, c)
		}
		return m.u(k-1, c)
	}
	first := m.u(k-1, k-1)
	if m.l1first && k == 2 {
		first = m.p(1, 1) // the leading S1 becomes W1
	}
	mid := pow(m.p(k-1, k-1), v-1)
	return seq(seq(first, mid), m.p(k-1, c))
}

// p is P(k, c) = wrap(U(k, c), k).
func (m *blockingModel) p(k, c int) block {
	return wrapRetry(m.u(k, c), k, m.lv.Restart[k-1], m.lv.Rates, m.total, m.retry)
}

// NonBlocking describes the two-level non-blocking scheme of SPEC-markov §5
// (Sato et al., SC12 §V): every segment ends with a blocking level-1
// checkpoint; the checkpoint closing a period is also copied to the shared
// tier in the background, which takes FlushLatency seconds of wall-clock time
// and slows computation by the factor (1+Alpha) while it is in flight.
type NonBlocking struct {
	Levels
	FlushLatency float64 // ℓ_2
	Alpha        float64 // α
	// RetryRecovery: a level-1 failure during R1 retries R1 instead of
	// leaving as a level-2 failure (BlockingOptions.RetryRecovery).
	RetryRecovery bool
}

// Validate checks the non-blocking parameters.
func (nb NonBlocking) Validate() error {
	if err := nb.Levels.Validate(); err != nil {
		return err
	}
	if nb.L() != 2 {
		return &ParamError{Param: "rates", Value: float64(nb.L()), Reason: "the non-blocking model has exactly two levels"}
	}
	if err := nonNegative("flush-latency", nb.FlushLatency); err != nil {
		return err
	}
	return nonNegative("alpha", nb.Alpha)
}

// IncompleteSegments is m = ceil(ℓ_2 / ((1+α)t + c1)) of SPEC-markov §5.2, the
// number of segments a background copy spans. The boundary is exact: when m
// segments exactly fill ℓ_2 the count is m (the reference's ceil(x(1-1e-9))).
func (nb NonBlocking) IncompleteSegments(t float64) int {
	if nb.FlushLatency == 0 {
		return 0
	}
	x := nb.FlushLatency / ((1+nb.Alpha)*t + nb.Cost[0])
	m := math.Ceil(x * (1 - 1e-9))
	if m > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(m)
}

// Evaluate computes the expected time per period and the efficiency of the
// non-blocking scheme for one schedule (SPEC-markov §5.4). The second entry of
// Cost is the blocking part of a level-2 checkpoint (SPEC §5 takes it equal
// to c1); it is paid by the last segment of each period.
func (nb NonBlocking) Evaluate(s Schedule) (MultilevelResult, error) {
	if err := nb.Validate(); err != nil {
		return MultilevelResult{}, err
	}
	if err := s.validate(2); err != nil {
		return MultilevelResult{}, err
	}
	n := s.Segments()
	m := nb.IncompleteSegments(s.Interval)
	if m > n {
		return MultilevelResult{}, fmt.Errorf("%w: the background copy (flush-latency %g s) spans %d segments of %g s but a period has only %d; lengthen the interval or the counts, or shorten the copy", ErrInfeasible, nb.FlushLatency, m, (1+nb.Alpha)*s.Interval+nb.Cost[0], n)
	}
	return nb.evaluate(s.Interval, s.Counts[0], m), nil
}

func (nb NonBlocking) evaluate(t float64, v, m int) MultilevelResult {
	n := v + 1
	total := nb.total()
	c1, c2, r1, r2 := nb.Cost[0], nb.Cost[1], nb.Restart[0], nb.Restart[1]
	w := func(T float64) block {
		return wrapRetry(seg(T, nb.Rates, total), 1, r1, nb.Rates, total, nb.RetryRecovery)
	}
	slow := (1 + nb.Alpha) * t

	// run builds segments first..last (1-based) of a period whose first m
	// segments are incomplete; the last segment of the period pays c2.
	run := func(first, last, m int) block {
		b := identity(2)
		if last < first {
			return b
		}
		inc := min(m, last) - first + 1 // incomplete segments in range
		if inc < 0 {
			inc = 0
		}
		// Segments other than the period's last pay c1.
		plain := last - first + 1
		if last == n {
			plain--
		}
		plainInc := min(inc, plain)
		b = seq(b, pow(w(slow+c1), plainInc))
		b = seq(b, pow(w(t+c1), plain-plainInc))
		if last == n {
			if n <= m {
				b = seq(b, w(slow+c2))
			} else {
				b = seq(b, w(t+c2))
			}
		}
		return b
	}
	d2 := math.Expm1(total*r2) / total // R2 retried until success

	pr := run(1, n, 0) // type R: no copy in flight
	eR := (pr.a[0] + pr.a[2] + pr.p[2]*d2) / pr.p[0]
	inc := run(1, m, m)
	comp := run(m+1, n, m)
	eN := (inc.a[0] + inc.a[2] + inc.p[2]*(d2+eR) +
		inc.p[0]*(comp.a[0]+comp.a[2]+comp.p[2]*(d2+eR))) / inc.p[0]

	res := MultilevelResult{Schedule: Schedule{Interval: t, Counts: []int{v}}, PeriodSeconds: eN, Incomplete: m}
	if math.IsNaN(eN) || math.IsInf(eN, 0) {
		// A clean period never completes in floating point (its success
		// probability underflowed); Inf·0 terms then give NaN.
		res.PeriodSeconds = math.Inf(1)
	}
	res.Efficiency = float64(n) * t / res.PeriodSeconds
	return res
}
