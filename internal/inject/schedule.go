package inject

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Event is one injected failure.
type Event struct {
	Seq    int64         // 0 for the first event of the schedule, then 1, 2, ...
	At     time.Duration // job time of the failure, from the job's start (cumulative)
	Target int           // index of the rank or node to kill among the live ones, or -1 if none
}

// Delay is how long after the start of a launch whose job time begins at
// base the event fires: At − base, or 0 if that has passed.
func (e Event) Delay(base time.Duration) time.Duration {
	return max(e.At-base, 0)
}

// PCG stream selectors: the times and the targets come from two generators
// with the same seed and different streams, so the failure times do not
// depend on the live counts passed to Next.
const (
	timeStream   = 0x74696d6573        // "times"
	targetStream = 0x74617267657473    // "targets"
	twoTo53      = 1 << 53             // float64 mantissa resolution
	maxSeconds   = math.MaxInt64 / 1e9 // the longest time.Duration, in seconds
)

// Schedule generates the failure events of a job. It is deterministic: the
// same Config gives the same events, in this process or another (see the
// package documentation). A Schedule is not safe for concurrent use.
type Schedule struct {
	cfg     Config
	scale   float64 // seconds
	inv     float64 // 1/k for the Weibull
	times   *rand.PCG
	targets *rand.PCG
	at      time.Duration
	seq     int64
}

// NewSchedule returns the schedule of a validated configuration.
func NewSchedule(c Config) (*Schedule, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Schedule{
		cfg:     c,
		scale:   c.Dist.Scale(c.MTTI.Seconds()),
		times:   rand.NewPCG(c.Seed, timeStream),
		targets: rand.NewPCG(c.Seed, targetStream),
	}
	if c.Dist.Family == Weibull {
		s.inv = 1 / c.Dist.Shape
	}
	return s, nil
}

// Config returns the schedule's configuration.
func (s *Schedule) Config() Config { return s.cfg }

// Next returns the next failure: its job time is the previous event's plus
// a fresh time between failures, and its target is uniform over [0, live)
// (-1 when live ≤ 0). The times do not depend on live. Job times saturate at
// the largest time.Duration, which means "never".
func (s *Schedule) Next(live int) Event {
	s.at = addSat(s.at, s.interArrival())
	e := Event{Seq: s.seq, At: s.at, Target: -1}
	s.seq++
	if live > 0 {
		e.Target = int(uniform(s.targets, uint64(live)))
	}
	return e
}

// interArrival draws one time between failures by inverting the CDF: with
// E = −ln U a standard exponential (U uniform on (0, 1]), the exponential
// of mean M is M·E and the Weibull of shape k and scale λ is λ·E^(1/k),
// since its CDF is F(x) = 1 − exp(−(x/λ)^k).
func (s *Schedule) interArrival() time.Duration {
	u := (float64(s.times.Uint64()>>11) + 1) / twoTo53
	e := -math.Log(u)
	x := s.scale * e
	if s.inv != 0 {
		x = s.scale * math.Pow(e, s.inv)
	}
	if !(x < maxSeconds) {
		return math.MaxInt64
	}
	return time.Duration(math.Round(x * 1e9))
}

// uniform returns an unbiased integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method.
func uniform(r *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
