package model

import "math"

// block is the exit summary of a piece of execution (SPEC-markov §2): for each
// exit e (0 = completed, i = left because of a failure that needs a level-i
// recovery outside the piece) the probability p[e] of leaving through e and
// the partial expectation a[e] = E[time in the piece ; exit = e].
//
// Blocks are small value types (L+1 entries) combined by the composition rules
// of SPEC-markov §3; nothing here allocates per level beyond two short slices.
type block struct {
	p, a []float64
}

func newBlock(levels int) block {
	return block{p: make([]float64, levels+1), a: make([]float64, levels+1)}
}

// identity is B^0: completes at once, takes no time.
func identity(levels int) block {
	b := newBlock(levels)
	b.p[0] = 1
	return b
}

// seg is an elementary state of fixed length T (SPEC-markov §2): a compute
// state "t + c" or a recovery state "r_k", exposed to Poisson failures of
// rates rates[i-1] for level i.
func seg(T float64, rates []float64, total float64) block {
	b := newBlock(len(rates))
	if total == 0 {
		b.p[0] = 1
		b.a[0] = T
		return b
	}
	x := total * T
	survive := math.Exp(-x)
	fail := -math.Expm1(-x)     // 1 - e^{-x}, exact for small x
	failTime := oneMinusExpTerm(x) / total // (1 - e^{-x}(1+x)) / λ
	b.p[0] = survive
	b.a[0] = T * survive
	for i, r := range rates {
		share := r / total
		b.p[i+1] = share * fail
		b.a[i+1] = share * failTime
	}
	return b
}

// oneMinusExpTerm returns 1 - e^{-x}(1+x) without cancellation: for small x it
// sums the series Σ_{k≥2} (-1)^k (k-1) x^k / k! (SPEC-markov §2, numerics).
func oneMinusExpTerm(x float64) float64 {
	if x >= 0.01 {
		return -math.Expm1(-x) - x*math.Exp(-x)
	}
	sum, term := 0.0, x // term = x^k / k!
	for k := 2; k < 12; k++ {
		term *= x / float64(k)
		s := float64(k-1) * term
		if k%2 == 1 {
			s = -s
		}
		sum += s
	}
	return sum
}

// seq is the sequence B ; C: run B, and C only if B completed (SPEC-markov §3).
func seq(b, c block) block {
	out := newBlock(len(b.p) - 1)
	out.p[0] = b.p[0] * c.p[0]
	out.a[0] = b.a[0]*c.p[0] + b.p[0]*c.a[0]
	for i := 1; i < len(b.p); i++ {
		out.p[i] = b.p[i] + b.p[0]*c.p[i]
		out.a[i] = b.a[i] + b.a[0]*c.p[i] + b.p[0]*c.a[i]
	}
	return out
}

// pow is B^n by binary exponentiation; sequence is associative (SPEC-markov §3).
func pow(b block, n int) block {
	result := identity(len(b.p) - 1)
	for n > 0 {
		if n&1 == 1 {
			result = seq(result, b)
		}
		n >>= 1
		if n > 0 {
			b = seq(b, b)
		}
	}
	return result
}

// eliminateLoop applies loop elimination (SPEC-markov §3): an attempt that
// restarts itself with partial time restartA and otherwise leaves through the
// exits of b. q is summed from the leaving exits, not taken as 1 - s, to avoid
// cancellation when restarts are almost certain.
func eliminateLoop(b block, restartA float64) block {
	q := 0.0
	for _, p := range b.p {
		q += p
	}
	out := newBlock(len(b.p) - 1)
	if q == 0 {
		// The attempt never leaves: infinite expected time.
		out.p[0] = 1
		out.a[0] = math.Inf(1)
		return out
	}
	for e := range b.p {
		out.p[e] = b.p[e] / q
		out.a[e] = b.a[e]/q + b.p[e]*restartA/(q*q)
	}
	return out
}

// wrap is Moody's protection state X (SPEC-markov §3): b followed, on a
// failure of level ≤ k, by a level-k recovery of length rk with retries, after
// which b is restarted. The result never leaves through exits 1..k.
func wrap(b block, k int, rk float64, rates []float64, total float64) block {
	levels := len(rates)
	// 1. Recovery with retries.
	r := seg(rk, rates, total)
	retry := func(i int) bool {
		if k == levels {
			return i >= 1
		}
		return i >= 1 && i < k
	}
	rNoRetry := newBlock(levels)
	retryA := 0.0
	for e := range r.p {
		if e > 0 && retry(e) {
			retryA += r.a[e]
			continue
		}
		rNoRetry.p[e] = r.p[e]
		rNoRetry.a[e] = r.a[e]
	}
	rr := eliminateLoop(rNoRetry, retryA)

	// 2. One attempt: b, then the recovery if b left with a level ≤ k.
	u, uA := 0.0, 0.0
	for i := 1; i <= k; i++ {
		u += b.p[i]
		uA += b.a[i]
	}
	attempt := newBlock(levels)
	attempt.p[0] = b.p[0]
	attempt.a[0] = b.a[0]
	for i := k + 1; i <= levels; i++ {
		attempt.p[i] += b.p[i]
		attempt.a[i] += b.a[i]
	}
	for j := 1; j <= levels; j++ {
		if rr.p[j] == 0 && rr.a[j] == 0 {
			continue
		}
		// A level-j failure during R_k needs a level above k.
		to := max(j, k+1)
		if to > levels {
			// Only possible when k = L, where every failure retries and
			// rr has no such exit; kept for safety.
			to = levels
		}
		attempt.p[to] += u * rr.p[j]
		attempt.a[to] += uA*rr.p[j] + u*rr.a[j]
	}
	restartA := uA*rr.p[0] + u*rr.a[0]

	// 3. Eliminate the restart loop.
	return eliminateLoop(attempt, restartA)
}
