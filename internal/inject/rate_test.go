package inject

import (
	"math"
	"testing"
	"time"
)

// The injector must strike at the rate its MTTI gives on the job's wall
// clock, as the models assume (Daly 000 eq. 1, Fialho et al. 003 eq. 10,
// the Markov model): the count over a job of length T is Poisson with mean
// T/MTTI, whatever the launches, restarts and gaps between them. These
// tests drive a Schedule on a fake clock through a simulated job and test
// the counts; no real time is involved, and every seed is fixed, so each
// test gives the same verdict on every run.

// clockRule is how a launcher turns the job's wall clock into the
// schedule's job time. Only wallClock is what the launcher does; the
// others are the departures the tests must catch.
type clockRule int

const (
	wallClock    clockRule = iota // the job's wall clock, gaps included; due in a gap: fires at the next launch
	pauseGaps                     // the clock stops between launches (tearing down, starting again)
	pauseRestart                  // it also stops while a launch restores its checkpoint
	dropInGaps                    // failures due between launches are lost
)

func (r clockRule) String() string {
	return [...]string{"wall clock", "clock paused between launches", "clock paused during restarts", "failures due between launches dropped"}[r]
}

// simJob is a job as the models see it: Work seconds of computation,
// a checkpoint of Cost every Interval, Restart at every launch's start
// (the first's too), and Gap between a failure and the next launch.
type simJob struct {
	Work, Interval, Cost, Restart, Gap time.Duration
}

// sim drives a schedule through a simulated job on a fake clock.
type sim struct {
	s        *Schedule
	rule     clockRule
	wall, jt time.Duration // the fake wall clock; the schedule's job time
	next     Event
	fired    int
}

// phase lets d of wall time pass in one phase of the job: running (a
// launch is up; restart: it is restoring) or not (between launches). It
// reports whether a failure struck, with the wall clock at the strike.
func (m *sim) phase(d time.Duration, running, restart bool) bool {
	paused := (m.rule == pauseGaps && !running) || (m.rule == pauseRestart && (!running || restart))
	adv := d
	if paused {
		adv = 0
	}
	if !running {
		// No application to kill: a failure due now waits for the next
		// launch, unless the rule drops it.
		for m.rule == dropInGaps && m.next.At <= m.jt+adv {
			m.next = m.s.Next(4)
		}
		m.wall, m.jt = m.wall+d, m.jt+adv
		return false
	}
	// Event.Delay is the launcher's rule: fire At − now after now, or at
	// once when that has passed.
	if dt := m.next.Delay(m.jt); dt < adv || dt == 0 {
		m.wall, m.jt = m.wall+dt, m.jt+dt
		m.fired++
		m.next = m.s.Next(4)
		return true
	}
	m.wall, m.jt = m.wall+d, m.jt+adv
	return false
}

// run runs the job to its end and returns the failures fired and the
// job's length on the wall clock. The length depends on the failures (a
// stopping time), as a real run's does.
func (j simJob) run(s *Schedule, rule clockRule) (fired int, length time.Duration) {
	m := &sim{s: s, rule: rule, next: s.Next(4)}
	var done time.Duration // work safe in a checkpoint
	for launch := 0; done < j.Work; launch++ {
		if launch > 0 {
			m.phase(j.Gap, false, false)
		}
		if m.phase(j.Restart, true, true) {
			continue
		}
		failed := false
		for p := done; p < j.Work && !failed; {
			c := min(j.Interval, j.Work-p)
			if failed = m.phase(c, true, false); failed {
				break
			}
			p += c
			if p < j.Work {
				failed = m.phase(j.Cost, true, false)
			}
			if !failed {
				done = p
			}
		}
	}
	return m.fired, m.wall
}

// rateZ runs the job for n seeds and returns the standardized excess of
// failures, Z = Σ(Nᵢ − Tᵢ/M) / √(Σ Tᵢ/M), and the dispersion D = Σ(Nᵢ −
// Tᵢ/M)² / Σ Tᵢ/M. For a Poisson process of rate 1/M stopped at the job's
// end (a stopping time), Nᵢ − Tᵢ/M has mean 0 and variance E[Tᵢ]/M
// (Wald's identities), so Z is close to standard normal and D to 1.
func rateZ(t *testing.T, j simJob, mtti time.Duration, rule clockRule, n int) (z, d, fired, expected float64) {
	t.Helper()
	var sq float64
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s, err := NewSchedule(Config{MTTI: mtti, Kind: Node, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		k, length := j.run(s, rule)
		e := length.Seconds() / mtti.Seconds()
		fired += float64(k)
		expected += e
		sq += (float64(k) - e) * (float64(k) - e)
	}
	return (fired - expected) / math.Sqrt(expected), sq / expected, fired, expected
}

// zLimit: a standard normal exceeds it in absolute value with probability
// 5.7e-7.
const zLimit = 5.0

// TestInjectedRateOnTheWallClock: over 2000 simulated jobs like the
// demo's (MTTI 2.5 s, checkpoints every second, restarts of 0.4 s), with
// gaps between launches exaggerated to half a second so that a clock that
// misses them misses a measurable share, the injected count matches the
// job's length over the MTTI; each departure the issue named (a clock
// that pauses between launches or during restarts, failures lost while a
// launch is starting) is rejected by the same test.
func TestInjectedRateOnTheWallClock(t *testing.T) {
	j := simJob{Work: 10 * time.Second, Interval: time.Second, Cost: 100 * time.Millisecond,
		Restart: 400 * time.Millisecond, Gap: 500 * time.Millisecond}
	const mtti, n = 2500 * time.Millisecond, 2000
	for _, rule := range []clockRule{wallClock, pauseGaps, pauseRestart, dropInGaps} {
		z, d, fired, expected := rateZ(t, j, mtti, rule, n)
		t.Logf("%s: %.0f failures fired, %.1f expected (run time / MTTI): Z = %+.2f, dispersion %.3f", rule, fired, expected, z, d)
		if rule == wallClock {
			if math.Abs(z) >= zLimit {
				t.Errorf("%s: Z = %+.2f: the count departs from run time / MTTI", rule, z)
			}
			// D's spread is about √(2/n) ≈ 0.03 around 1 here; 0.25 off
			// is beyond chance and would show failures clustered or
			// spread out beyond a Poisson process.
			if d < 0.75 || d > 1.25 {
				t.Errorf("%s: dispersion %.3f, want about 1", rule, d)
			}
		} else if z > -zLimit {
			t.Errorf("%s: Z = %+.2f: the test does not see this departure's shortfall", rule, z)
		}
	}
}

// TestScheduleIsPoisson: over 2000 seeds the counts of events in a fixed
// window of 25 s at MTTI 2.5 s (mean μ = 10) have the Poisson mean and
// variance: the mean's Z and the index of dispersion Σ(N − μ)²/μ, whose
// mean is n and variance n(2 + 1/μ), both within 5 standard deviations
// (a correct process fails with probability under 1e-6).
func TestScheduleIsPoisson(t *testing.T) {
	const n, window, mtti = 2000, 25 * time.Second, 2500 * time.Millisecond
	mu := window.Seconds() / mtti.Seconds()
	for _, dist := range []Dist{{Family: Exponential}, {Family: Weibull, Shape: 1}} {
		var sum, x float64
		for seed := uint64(1); seed <= n; seed++ {
			s, err := NewSchedule(Config{MTTI: mtti, Dist: dist, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for s.Next(1).At <= window {
				k++
			}
			sum += float64(k)
			x += (float64(k) - mu) * (float64(k) - mu) / mu
		}
		zMean := (sum - n*mu) / math.Sqrt(n*mu)
		zDisp := (x - n) / math.Sqrt(n*(2+1/mu))
		t.Logf("%v: mean %.3f (μ = %g), Z = %+.2f; dispersion %.0f for n = %d, Z = %+.2f", dist, sum/n, mu, zMean, x, n, zDisp)
		if math.Abs(zMean) >= zLimit || math.Abs(zDisp) >= zLimit {
			t.Errorf("%v: not a Poisson process of rate 1/%v: mean Z %+.2f, dispersion Z %+.2f", dist, mtti, zMean, zDisp)
		}
	}
}

// TestConsecutiveSeedsIndependent: the demo's tables run seeds 1…20, so
// sums over 20 consecutive seeds must vary as for independent Poisson
// counts. PCG seeded with small integers differs only in the high word of
// its state, which could in principle correlate neighbours. Over 1000
// blocks of 20 seeds the standardized block sums Z = (ΣN − 20μ)/√(20μ) of
// counts in 30 s at MTTI 2.5 s (μ = 12) have mean 0 and variance 1: the
// mean within 5 standard errors (5/√1000), the variance within 0.3 of 1 (its
// standard error is about √(2/1000) = 0.045). Seeds 1…20 themselves are a
// low block (Z = −2.1 here, −2.3 over 60 s): their runs meet fewer
// failures than T/M by chance, which docs/PERFORMANCE.md reports.
func TestConsecutiveSeedsIndependent(t *testing.T) {
	const blocks, size, window, mtti = 1000, 20, 30 * time.Second, 2500 * time.Millisecond
	mu := window.Seconds() / mtti.Seconds()
	var sum, sq float64
	for b := range uint64(blocks) {
		k := 0
		for seed := b*size + 1; seed <= (b+1)*size; seed++ {
			s, err := NewSchedule(Config{MTTI: mtti, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for s.Next(1).At <= window {
				k++
			}
		}
		z := (float64(k) - size*mu) / math.Sqrt(size*mu)
		if b == 0 {
			t.Logf("seeds 1…%d: %d events in %v, %.0f expected: Z = %+.2f", size, k, window, size*mu, z)
		}
		sum += z
		sq += z * z
	}
	mean := sum / blocks
	v := sq/blocks - mean*mean
	t.Logf("%d blocks of %d seeds: Z mean %+.3f, variance %.3f", blocks, size, mean, v)
	if math.Abs(mean) > zLimit/math.Sqrt(blocks) || math.Abs(v-1) > 0.3 {
		t.Errorf("block sums of consecutive seeds: Z mean %+.3f, variance %.3f; want 0 and 1", mean, v)
	}
}
