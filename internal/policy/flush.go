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
	Level1MTTI  time.Duration // 1/λ1: failures the node-local level recovers (0: Level2MTTI)
	Level2MTTI  time.Duration // 1/λ2: failures only the shared tier recovers
	NonBlocking bool
	// FlushCost is the blocking time a flush adds (blocking), or its
	// latency ℓ2 in the background (non-blocking); 0 until measured.
	FlushCost time.Duration
	Alpha     float64 // α (non-blocking)
}

// MaxFlushEvery bounds the K ChooseK returns.
const MaxFlushEvery = 1000

// ChooseK returns the K that maximises the two-level Markov model's
// efficiency at the job's interval, blocking (SPEC-markov §4) or
// non-blocking (§5), for what the job measured (Measured states the
// assumptions; no restart is measured here, so a recovery costs what the
// write did). Without a level-1 MTTI it takes the level-2 one: λ1 moves K
// little; λ2, c2 and t decide it. Until a flush has been measured it
// returns 1, so that one is.
func ChooseK(in FlushInputs) (int, error) {
	if in.FlushCost <= 0 {
		return 1, nil
	}
	if in.Level1MTTI <= 0 {
		in.Level1MTTI = in.Level2MTTI
	}
	if in.Interval <= 0 || in.Level1MTTI <= 0 || in.Level2MTTI <= 0 {
		return 0, errors.New("policy: choosing K needs the interval and both MTTIs")
	}
	m := Measured{Interval: in.Interval.Seconds(), Level1Cost: in.Level1Cost.Seconds(), FlushCost: in.FlushCost.Seconds(),
		NonBlocking: in.NonBlocking, Alpha: in.Alpha, Restart: math.NaN(),
		Level1MTTI: in.Level1MTTI.Seconds(), Level2MTTI: in.Level2MTTI.Seconds()}
	eval := func(v int) (float64, error) {
		r, err := m.Evaluate(model.Schedule{Interval: m.Interval, Counts: []int{v}})
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
