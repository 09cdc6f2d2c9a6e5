package sim

import (
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/ckpt/ckpt/model"
)

// clock draws the failures of one replication: one renewal process per
// category (level), on the job's wall clock, from the replication's own PCG
// stream. It keeps the earliest pending failure in (at, cat) so that the
// event loops compare one number per phase.
type clock struct {
	rng   rand.PCG
	n     int                      // categories
	next  [model.MaxLevels]float64 // next failure time per category (+Inf if the rate is 0)
	scale [model.MaxLevels]float64 // mean (exponential) or Weibull scale per category
	inv   float64                  // 1/k for the Weibull, 0 for the exponential
	at    float64                  // earliest pending failure
	cat   int                      // its category, 0-based
}

// twoTo53 is the resolution of a float64 mantissa.
const twoTo53 = 1 << 53

// streamSeeds derives the two PCG seeds of replication r from the run's
// seed with SplitMix64, so that neighbouring replications get unrelated
// states (seeding PCG with (seed, r) directly would put replications at
// states one apart).
func streamSeeds(seed uint64, r int) (uint64, uint64) {
	a := splitmix(seed ^ splitmix(uint64(r)*0x9e3779b97f4a7c15+1))
	b := splitmix(a ^ 0xd1b54a32d192ed03 ^ uint64(r))
	return a, b
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// reset starts the failure processes of replication r at time 0.
func (c *clock) reset(cfg *Config, seed uint64, r int) {
	a, b := streamSeeds(seed, r)
	c.rng.Seed(a, b)
	c.n = len(cfg.Rates)
	c.inv = 0
	if cfg.Dist.Weibull() {
		c.inv = 1 / cfg.Dist.Shape
	}
	for i := 0; i < c.n; i++ {
		if cfg.Rates[i] > 0 {
			c.scale[i] = cfg.Dist.scale(1 / cfg.Rates[i])
			c.next[i] = c.draw(i)
		} else {
			c.scale[i] = 0
			c.next[i] = math.Inf(1)
		}
	}
	c.min()
}

// draw is one time between failures of category i, by inverting the CDF:
// with E = −ln U a standard exponential (U uniform on (0, 1]), the
// exponential of mean M is M·E and the Weibull of shape k and scale λ is
// λ·E^(1/k). Samples come from the raw 64-bit output, never from rand.Rand's
// methods, whose algorithms math/rand/v2 does not promise to keep.
func (c *clock) draw(i int) float64 {
	u := (float64(c.rng.Uint64()>>11) + 1) / twoTo53
	e := -math.Log(u)
	if c.inv != 0 {
		e = math.Pow(e, c.inv)
	}
	return c.scale[i] * e
}

// consume moves past the earliest pending failure.
func (c *clock) consume() {
	c.next[c.cat] += c.draw(c.cat)
	c.min()
}

func (c *clock) min() {
	at, cat := c.next[0], 0
	for i := 1; i < c.n; i++ {
		if c.next[i] < at {
			at, cat = c.next[i], i
		}
	}
	c.at, c.cat = at, cat
}

// uniform returns an unbiased integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method.
func (c *clock) uniform(n uint64) uint64 {
	hi, lo := bits.Mul64(c.rng.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(c.rng.Uint64(), n)
		}
	}
	return hi
}
