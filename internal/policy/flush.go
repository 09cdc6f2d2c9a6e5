package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

// FlushEvery is how often checkpoints go to the shared tier: every K-th
// checkpoint, K fixed, or K chosen by the multi-level Markov model
// (SPEC-markov §4, §5) from what the job measures.
type FlushEvery struct {
	K int // fixed K ≥ 1; 0 with Auto
	// Auto chooses K; Level2MTTI is the mean time between failures the
	// node-local level cannot recover (the rate λ2 the shared tier
	// protects against).
	Auto       bool
	Level2MTTI time.Duration
}

// ParseFlushEvery reads "K" (a whole number ≥ 1) or "auto:MTTI" (MTTI a
// duration such as 24h: the mean time between failures only the shared
// tier recovers from).
func ParseFlushEvery(s string) (FlushEvery, error) {
	if rest, ok := strings.CutPrefix(s, "auto:"); ok {
		sec, err := units.ParseDuration(rest)
		if err != nil || sec <= 0 {
			return FlushEvery{}, fmt.Errorf("flush every %q: after auto: give the mean time between failures the caches cannot survive, such as auto:24h", s)
		}
		return FlushEvery{Auto: true, Level2MTTI: time.Duration(sec * float64(time.Second))}, nil
	}
	if s == "auto" {
		return FlushEvery{}, fmt.Errorf("flush every %q: auto needs the mean time between failures the caches cannot survive: auto:24h, say", s)
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		return FlushEvery{}, fmt.Errorf("flush every %q: want a whole number ≥ 1 or auto:MTTI", s)
	}
	return FlushEvery{K: k}, nil
}

func (f FlushEvery) String() string {
	if f.Auto {
		return "auto:" + f.Level2MTTI.String()
	}
	return strconv.Itoa(f.K)
}

// FlushInputs are what ChooseK decides from, as the job measured them.
type FlushInputs struct {
	Interval    time.Duration // t: computation between checkpoints
	Level1Cost  time.Duration // c1: a checkpoint's blocking time
	Level1MTTI  time.Duration // 1/λ1: failures the node-local level recovers
	Level2MTTI  time.Duration // 1/λ2: failures only the shared tier recovers
	NonBlocking bool
	// FlushCost is the blocking time a flush adds (blocking), or its
	// latency ℓ2 in the background (non-blocking); 0 until measured.
	FlushCost time.Duration
	Alpha     float64 // α (non-blocking)
}

// MaxFlushEvery bounds the K ChooseK returns.
const MaxFlushEvery = 1000

// ChooseK returns the K that maximises the Markov model's efficiency at the
// job's interval: the blocking model of SPEC-markov §4 (c2 = c1 + the
// flush) or the non-blocking one of §5 (ℓ2 = the flush latency, α), with
// restart costs taken equal to the write costs. Until a flush has been
// measured it returns 1, so that one is.
func ChooseK(in FlushInputs) (int, error) {
	if in.FlushCost <= 0 {
		return 1, nil
	}
	t, c1 := in.Interval.Seconds(), max(in.Level1Cost.Seconds(), 1e-6)
	if t <= 0 || in.Level1MTTI <= 0 || in.Level2MTTI <= 0 {
		return 0, errors.New("policy: choosing K needs the interval and both MTTIs")
	}
	f := in.FlushCost.Seconds()
	lv := model.Levels{Rates: []float64{1 / in.Level1MTTI.Seconds(), 1 / in.Level2MTTI.Seconds()}}
	eval := func(v int) (float64, error) {
		s := model.Schedule{Interval: t, Counts: []int{v}}
		if in.NonBlocking {
			lv.Cost, lv.Restart = []float64{c1, c1}, []float64{c1, c1 + f}
			r, err := model.NonBlocking{Levels: lv, FlushLatency: f, Alpha: max(in.Alpha, 0)}.Evaluate(s)
			return r.Efficiency, err
		}
		lv.Cost, lv.Restart = []float64{c1, c1 + f}, []float64{c1, c1 + f}
		r, err := model.Blocking(lv, s, model.BlockingOptions{})
		return r.Efficiency, err
	}
	best, bestEff := 0, math.Inf(-1)
	for v := 0; v < MaxFlushEvery; v++ {
		eff, err := eval(v)
		if errors.Is(err, model.ErrInfeasible) {
			continue // the copy outlasts the period: a longer one
		}
		if err != nil {
			return 0, err
		}
		if eff > bestEff {
			best, bestEff = v, eff
		} else if v > 2*best+8 {
			break // unimodal in v: well past the peak
		}
	}
	if math.IsInf(bestEff, -1) {
		return MaxFlushEvery, nil
	}
	return best + 1, nil
}
