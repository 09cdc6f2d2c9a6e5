package model

import "math"

// MaxLevels is the largest number of checkpoint levels the Markov models
// accept. Blocks are fixed-size arrays so that the optimiser's inner loop
// does not allocate.
const MaxLevels = 8

// block is the exit summary of a piece of execution (SPEC-markov §2): for each
// exit e (0 = completed, i = left because of a failure that needs a level-i
// recovery outside the piece) the probability p[e] of leaving through e and
// the partial expectation a[e] = E[time in the piece ; exit = e]. Entries
// beyond n, the number of levels, stay zero.
type block struct {
	n    int
	p, a [MaxLevels + 1]float64
}

// identity is B^0: completes at once, takes no time.
func identity(levels int) block {
	b := block{n: levels}
	b.p[0] = 1
	return b
}

// seg is an elementary state of fixed length T (SPEC-markov §2): a compute
// state "t + c" or a recovery state "r_k", exposed to Poisson failures of
// rates rates[i-1] for level i, whose sum is total.
func seg(T float64, rates []float64, total float64) block {
	b := block{n: len(rates)}
	if total == 0 {
		b.p[0] = 1
		b.a[0] = T
		return b
	}
	x := total * T
	survive := math.Exp(-x)
	fail := -math.Expm1(-x)                // 1 − e^{−x}, exact for small x
	failTime := oneMinusExpTerm(x) / total // (1 − e^{−x}(1+x)) / λ
	b.p[0] = survive
	b.a[0] = T * survive
	for i, r := range rates {
		share := r / total
		b.p[i+1] = share * fail
		b.a[i+1] = share * failTime
	}
	return b
}

// oneMinusExpTerm returns 1 − e^{−x}(1+x) without cancellation: for small x it
// sums the series Σ_{k≥2} (−1)^k (k−1) x^k / k! (SPEC-markov §2, numerics).
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
	out := block{n: b.n}
	out.p[0] = b.p[0] * c.p[0]
	out.a[0] = b.a[0]*c.p[0] + b.p[0]*c.a[0]
	for i := 1; i <= b.n; i++ {
		out.p[i] = b.p[i] + b.p[0]*c.p[i]
		out.a[i] = b.a[i] + b.a[0]*c.p[i] + b.p[0]*c.a[i]
	}
	return out
}

// pow is B^n by binary exponentiation; sequence is associative (SPEC-markov §3).
func pow(b block, n int) block {
	result := identity(b.n)
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
// exits of b. q is summed from the leaving exits, not taken as 1 − s, to avoid
// cancellation when restarts are almost certain.
func eliminateLoop(b block, restartA float64) block {
	q := 0.0
	for e := 0; e <= b.n; e++ {
		q += b.p[e]
	}
	out := block{n: b.n}
	if q == 0 {
		// The attempt never leaves: infinite expected time.
		out.p[0] = 1
		out.a[0] = math.Inf(1)
		return out
	}
	for e := 0; e <= b.n; e++ {
		out.p[e] = b.p[e] / q
		out.a[e] = b.a[e]/q + b.p[e]*restartA/(q*q)
	}
	return out
}

// wrap is Moody's protection state X (SPEC-markov §3): b followed, on a
// failure of level ≤ k, by a level-k recovery of length rk with retries, after
// which b is restarted. The result never leaves through exits 1..k.
func wrap(b block, k int, rk float64, rates []float64, total float64) block {
	return wrapRetry(b, k, rk, rates, total, false)
}

// wrapRetry is wrap; with retryOwn, a failure of level k during R_k
// retries R_k as the lower levels' do, instead of escalating to level
// k+1: only failures of the levels above k escalate (RetryRecovery).
func wrapRetry(b block, k int, rk float64, rates []float64, total float64, retryOwn bool) block {
	levels := b.n
	// 1. Recovery with retries: every level at the top, levels below k
	// otherwise (up to k with retryOwn).
	r := seg(rk, rates, total)
	retryBelow := k
	if k == levels {
		retryBelow = levels + 1
	} else if retryOwn {
		retryBelow = k + 1
	}
	rNoRetry := block{n: levels}
	retryA := 0.0
	for e := 0; e <= levels; e++ {
		if e >= 1 && e < retryBelow {
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
	attempt := block{n: levels}
	attempt.p[0] = b.p[0]
	attempt.a[0] = b.a[0]
	for i := k + 1; i <= levels; i++ {
		attempt.p[i] += b.p[i]
		attempt.a[i] += b.a[i]
	}
	// A level-j failure during R_k leaves with level max(j, k+1): a level-k
	// failure during R_k needs a higher level. (At the top level every
	// failure retries, so rr has no such exit.)
	for j := k; j <= levels; j++ {
		to := min(max(j, k+1), levels)
		attempt.p[to] += u * rr.p[j]
		attempt.a[to] += uA*rr.p[j] + u*rr.a[j]
	}
	restartA := uA*rr.p[0] + u*rr.a[0]

	// 3. Eliminate the restart loop.
	return eliminateLoop(attempt, restartA)
}
