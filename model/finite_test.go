package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// twoLevels is a two-level setting with frequent failures, so that a short
// job meets several and the Monte Carlo below has something to test.
func twoLevels(l1, l2 float64) Levels {
	return Levels{Rates: []float64{l1, l2}, Cost: []float64{0.1, 0.5}, Restart: []float64{0.3, 0.6}}
}

func TestJobSegmentsAndCounts(t *testing.T) {
	sch := Scheme{Levels: twoLevels(0.1, 0)}
	for _, c := range []struct {
		work, interval    float64
		k                 int
		segs, ckpt, flush int
	}{
		// The demo's flushing job: 7.2 s of computation at t = 1 s, K = 2:
		// 7 checkpoints, 3 of them flushed, and 0.2 s into the 8th interval.
		{7.2, 1, 2, 8, 7, 3},
		{8, 1, 2, 8, 7, 3}, // no checkpoint after the last step
		{8 + 1e-12, 1, 2, 8, 7, 3},
		{9, 1, 2, 9, 8, 4},
		{0.3, 1, 2, 1, 0, 0}, // shorter than one interval
		{1, 1, 2, 1, 0, 0},
		{7.2, 1, 1, 8, 7, 7},
		{7.2, 1, 3, 8, 7, 2},
	} {
		if got := JobSegments(c.work, c.interval); got != c.segs {
			t.Errorf("JobSegments(%g, %g) = %d, want %d", c.work, c.interval, got, c.segs)
		}
		r, err := sch.EvaluateJob(Schedule{Interval: c.interval, Counts: []int{c.k - 1}}, Job{Work: c.work})
		if err != nil {
			t.Fatal(err)
		}
		if r.Checkpoints != c.ckpt || r.Flushes != c.flush {
			t.Errorf("work %g, K = %d: %d checkpoints, %d flushes; want %d, %d", c.work, c.k, r.Checkpoints, r.Flushes, c.ckpt, c.flush)
		}
	}
}

// Without failures the job takes its work plus the checkpoints it really
// takes, exactly, where the steady-state model charges work/(N t) periods.
func TestJobFailureFree(t *testing.T) {
	lv := twoLevels(0, 0)
	sch := Schedule{Interval: 1, Counts: []int{1}}
	r, err := Scheme{Levels: lv}.EvaluateJob(sch, Job{Work: 7.2, Lead: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	// 7 checkpoints: 4 of level 1 (0.1 s), 3 flushed (0.5 s).
	want := 0.4 + 7.2 + 4*0.1 + 3*0.5
	checkRel(t, "blocking failure-free seconds", r.Seconds, want, 1e-12)
	checkRel(t, "blocking failure-free efficiency", r.Efficiency, 7.6/want, 1e-12)
	// The steady-state model's failure-free efficiency, N t over the
	// period, charges 3.6 periods: it is lower.
	ss := 2.0 / (2 + 0.1 + 0.5)
	if !(r.Efficiency > ss+0.01) {
		t.Errorf("finite failure-free efficiency %g should exceed the steady state's %g by the part of a period not reached", r.Efficiency, ss)
	}

	// Non-blocking: the blocking part of every checkpoint is c1; the first
	// m segments of every period after the first are slowed by 1 + α.
	nbLv := lv
	nbLv.Cost = []float64{0.1, 0.1}
	nb := Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 1, Alpha: 0.5} // m = ceil(1/(1.5+0.1)) = 1
	r, err = nb.EvaluateJob(sch, Job{Work: 7.2})
	if err != nil {
		t.Fatal(err)
	}
	// Periods [1 1] [1 1] [1 1] [1 0.2]: the first segment of periods 2–4
	// slowed (3 × 0.5 s), 7 checkpoints of 0.1 s.
	checkRel(t, "non-blocking failure-free seconds", r.Seconds, 7.2+7*0.1+3*0.5, 1e-12)
	// The last period is one segment of 0.2 s, slowed.
	r, err = nb.EvaluateJob(sch, Job{Work: 6.2})
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "non-blocking failure-free, slowed last segment", r.Seconds, 6.2+6*0.1+2*0.5+0.5*0.2, 1e-12)
}

// dalyInterval is Daly's expected time of a segment of length T restarted
// in r (SPEC-markov §4.5; Oldfield et al. 2007, eq. 1).
func dalyInterval(T, r, lambda float64) float64 {
	return math.Exp(lambda*r) * math.Expm1(lambda*T) / lambda
}

// One level: every segment is a period; the job is the sum of Daly's
// expected times of its segments, the last without a checkpoint.
func TestJobSingleLevelIsDalyPerSegment(t *testing.T) {
	lam, c, r := 0.2, 0.15, 0.4
	lv := Levels{Rates: []float64{lam}, Cost: []float64{c}, Restart: []float64{r}}
	for _, job := range []Job{{Work: 7.7}, {Work: 7.7, Lead: 0.5}, {Work: 3}, {Work: 0.4, Lead: 0.2}} {
		res, err := Scheme{Levels: lv}.EvaluateJob(Schedule{Interval: 0.75}, job)
		if err != nil {
			t.Fatal(err)
		}
		S := JobSegments(job.Work, 0.75)
		var want float64
		for j := 0; j < S; j++ {
			T := 0.75 + c
			if j == S-1 {
				T = job.Work - float64(S-1)*0.75
			}
			if j == 0 {
				T += job.Lead
			}
			want += dalyInterval(T, r, lam)
		}
		checkRel(t, "one level", res.Seconds, want, 1e-12)
	}
}

// A job shorter than one interval takes no checkpoint: at the top level
// every failure restarts it from its start, restart retried (two levels,
// Moody's rule: the start is a level-2 checkpoint, so R2).
func TestJobShorterThanOneInterval(t *testing.T) {
	sch := Schedule{Interval: 1, Counts: []int{1}}
	for _, lv := range []Levels{twoLevels(0.3, 0), twoLevels(0.2, 0.1)} {
		res, err := Scheme{Levels: lv}.EvaluateJob(sch, Job{Work: 0.6})
		if err != nil {
			t.Fatal(err)
		}
		if res.Checkpoints != 0 || res.Flushes != 0 {
			t.Errorf("%d checkpoints, %d flushes", res.Checkpoints, res.Flushes)
		}
		checkRel(t, "blocking, W < t", res.Seconds, dalyInterval(0.6, 0.6, lv.total()), 1e-12)
	}
	// Non-blocking with retried level-1 restarts and λ2 = 0: every failure
	// costs R1 and the segment again.
	nb := Scheme{Levels: twoLevels(0.3, 0), NonBlocking: true, FlushLatency: 1, Options: BlockingOptions{RetryRecovery: true}}
	res, err := nb.EvaluateJob(sch, Job{Work: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "non-blocking, W < t", res.Seconds, dalyInterval(0.6, 0.3, 0.3), 1e-12)
}

// As the job grows its efficiency tends to the steady-state model's, and
// its distance from it falls as 1/W (the end effect is a bounded time).
func TestJobConvergesToSteadyState(t *testing.T) {
	nbLv := twoLevels(0.05, 0.01)
	nbLv.Cost = []float64{0.1, 0.1}
	cases := []struct {
		name string
		s    Scheme
		k    int
	}{
		{"blocking Moody", Scheme{Levels: twoLevels(0.05, 0.01)}, 3},
		{"blocking retry", Scheme{Levels: twoLevels(0.05, 0.01), Options: BlockingOptions{RetryRecovery: true}}, 2},
		{"blocking L1-protected", Scheme{Levels: twoLevels(0.05, 0), Options: BlockingOptions{L1ProtectedFirst: true}}, 4},
		{"blocking K = 1", Scheme{Levels: twoLevels(0.05, 0.01)}, 1},
		{"one level", Scheme{Levels: Levels{Rates: []float64{0.05}, Cost: []float64{0.1}, Restart: []float64{0.3}}}, 0},
		{"non-blocking m < n", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 1.5, Alpha: 0.2}, 3},
		{"non-blocking m = n", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 3, Alpha: 0.2}, 3},
		{"non-blocking m = 0, retry", Scheme{Levels: nbLv, NonBlocking: true, Options: BlockingOptions{RetryRecovery: true}}, 2},
	}
	for _, c := range cases {
		sch := Schedule{Interval: 1}
		if c.k > 0 {
			sch.Counts = []int{c.k - 1}
		}
		ss, err := c.s.Evaluate(sch)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := float64(sch.Segments())
		var prev float64
		for i, periods := range []float64{10, 100, 1000, 10000} {
			// Half a period past a whole number, with a lead: the end
			// effects are all there.
			res, err := c.s.EvaluateJob(sch, Job{Work: (periods + 0.5) * n, Lead: 0.3})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			d := math.Abs(res.Efficiency/ss.Efficiency - 1)
			if i > 0 && !(d < prev/5) {
				t.Errorf("%s: %g periods: |finite/steady − 1| = %g, not below a fifth of the previous %g", c.name, periods, d, prev)
			}
			prev = d
		}
		if !(prev < 1e-3) {
			t.Errorf("%s: 10000 periods: finite/steady − 1 = %g", c.name, prev)
		}
	}
}

func TestJobErrors(t *testing.T) {
	sch := Schedule{Interval: 1, Counts: []int{1}}
	ok := Scheme{Levels: twoLevels(0.1, 0)}
	checkParamErr(t, "work 0", second(ok.EvaluateJob(sch, Job{Work: 0})), "work")
	checkParamErr(t, "work NaN", second(ok.EvaluateJob(sch, Job{Work: math.NaN()})), "work")
	checkParamErr(t, "lead < 0", second(ok.EvaluateJob(sch, Job{Work: 1, Lead: -1})), "lead")
	checkParamErr(t, "huge work", second(ok.EvaluateJob(sch, Job{Work: 1e12})), "work")
	checkParamErr(t, "negative rate", second(Scheme{Levels: twoLevels(-0.1, 0.2)}.EvaluateJob(sch, Job{Work: 1})), "rates")
	checkParamErr(t, "counts", second(ok.EvaluateJob(Schedule{Interval: 1}, Job{Work: 1})), "counts")
	three := Levels{Rates: []float64{0.1, 0, 0}, Cost: []float64{1, 1, 1}, Restart: []float64{1, 1, 1}}
	checkParamErr(t, "three levels", second(Scheme{Levels: three}.EvaluateJob(Schedule{Interval: 1, Counts: []int{1, 1}}, Job{Work: 1})), "rates")
	one := Levels{Rates: []float64{0.1}, Cost: []float64{1}, Restart: []float64{1}}
	checkParamErr(t, "non-blocking one level", second(Scheme{Levels: one, NonBlocking: true}.EvaluateJob(Schedule{Interval: 1}, Job{Work: 1})), "rates")
	checkParamErr(t, "protected one level", second(Scheme{Levels: one, Options: BlockingOptions{L1ProtectedFirst: true}}.EvaluateJob(Schedule{Interval: 1}, Job{Work: 1})), "rates")
	nb := Scheme{Levels: twoLevels(0.1, 0), NonBlocking: true, FlushLatency: 5}
	if _, err := nb.EvaluateJob(sch, Job{Work: 10}); !errors.Is(err, ErrInfeasible) {
		t.Errorf("a copy longer than a period: %v, want ErrInfeasible", err)
	}
	checkParamErr(t, "alpha < 0", second(Scheme{Levels: twoLevels(0.1, 0), NonBlocking: true, Alpha: -1}.EvaluateJob(sch, Job{Work: 1})), "alpha")
}

func second[T any](_ T, err error) error { return err }

// mcJob is a brute-force Monte Carlo simulation of one finite job under
// the operational rules of SPEC-markov §4.3 (blocking) and §5.3
// (non-blocking), written from those rules and not from the blocks: it
// walks the job's segments one by one, drawing failures of a Poisson
// process of rate λ1 + λ2 on the wall clock.
type mcJob struct {
	lam             [2]float64 // λ1, λ2 (λ2 unused with one level)
	levels          int
	r               [2]float64
	compute, cost   []float64 // per segment; cost 0 for the last
	level           []int     // the checkpoint closing each segment: 0 none, 1, 2
	n               int       // segments per period
	nonblocking     bool
	m               int
	slow            float64
	retry, l1first  bool
	failures, total int // counted over the samples, to show they were many
}

func newMCJob(s Scheme, sch Schedule, job Job) *mcJob {
	j := &mcJob{levels: s.L(), n: sch.Segments(), nonblocking: s.NonBlocking, slow: 1 + s.Alpha,
		retry: s.Options.RetryRecovery, l1first: s.Options.L1ProtectedFirst}
	for i := range s.L() {
		j.lam[i], j.r[i] = s.Rates[i], s.Restart[i]
	}
	if s.NonBlocking {
		j.m = NonBlocking{Levels: s.Levels, FlushLatency: s.FlushLatency, Alpha: s.Alpha}.IncompleteSegments(sch.Interval)
	}
	S := int(math.Ceil(job.Work/sch.Interval - 1e-9))
	for i := 0; i < S; i++ {
		c, lev, cost := sch.Interval, 1, s.Cost[0]
		if (i+1)%j.n == 0 {
			lev, cost = j.levels, s.Cost[j.levels-1]
		}
		if i == S-1 {
			c, lev, cost = job.Work-float64(S-1)*sch.Interval, 0, 0
		}
		if i == 0 {
			c += job.Lead
		}
		j.compute = append(j.compute, c)
		j.cost = append(j.cost, cost)
		j.level = append(j.level, lev)
	}
	return j
}

// run simulates one job and returns its wall-clock time.
func (j *mcJob) run(rng *rand.Rand) float64 {
	lam := j.lam[0] + j.lam[1]
	now := 0.0
	next := func() float64 { return now + rng.ExpFloat64()/lam }
	fail := next()
	draw := func() int { // the level of a failure
		j.failures++
		if j.levels == 2 && rng.Float64()*lam >= j.lam[0] {
			return 2
		}
		return 1
	}
	if j.nonblocking {
		return j.runNonBlocking(&now, &fail, next, draw)
	}
	L := j.levels
	pos := 0
	lastAny, lastAnyLevel, lastTop := 0, L, 0 // the start is a checkpoint of every level
	for pos < len(j.compute) {
		d := j.compute[pos] + j.cost[pos]
		if now+d <= fail {
			now += d
			if lev := j.level[pos]; lev > 0 {
				lastAny, lastAnyLevel = pos+1, lev
				if lev == L {
					lastTop = pos + 1
				}
			}
			pos++
			continue
		}
		now = fail
		fail = next()
		i := draw()
		for { // recover from a level-i failure (§4.3)
			k, to := L, lastTop
			if i == 1 && (lastAnyLevel == 1 || j.l1first) {
				k, to = 1, lastAny
			}
			if now+j.r[k-1] <= fail {
				now += j.r[k-1]
				pos = to
				if k == L {
					lastAny, lastAnyLevel = lastTop, L
				}
				break
			}
			now = fail
			fail = next()
			i2 := draw()
			if k == L || i2 < k || (j.retry && i2 == k) {
				continue // R_k again, for the same failure
			}
			i = max(i2, k+1)
		}
	}
	return now
}

func (j *mcJob) runNonBlocking(now, fail *float64, next func() float64, draw func() int) float64 {
	pos, start, prevStart := 0, 0, 0
	typeN := false
	for pos < len(j.compute) {
		incomplete := typeN && pos-start < j.m
		d := j.compute[pos]
		if incomplete {
			d *= j.slow
		}
		d += j.cost[pos]
		if *now+d <= *fail {
			*now += d
			pos++
			if j.level[pos-1] == 2 { // a period's end: its copy starts
				prevStart, start, typeN = start, pos, true
			}
			continue
		}
		*now = *fail
		*fail = next()
		i := draw()
		for i == 1 { // R1, then the segment again (§5.3)
			if *now+j.r[0] <= *fail {
				*now += j.r[0]
				break
			}
			*now = *fail
			*fail = next()
			if i2 := draw(); !(j.retry && i2 == 1) {
				i = 2 // a failure during R1 is a level-2 failure here
			}
		}
		if i == 1 {
			continue
		}
		if incomplete { // the copy is lost: back to the previous period
			start = prevStart
		}
		pos, typeN = start, false
		for *now+j.r[1] > *fail { // R2, retried after any failure
			*now = *fail
			*fail = next()
			draw()
		}
		*now += j.r[1]
	}
	return *now
}

// The finite-job model matches a brute-force simulation of the same jobs
// within statistical error: the tolerance is 4.5 standard errors of the
// simulated mean (a 1-in-150 000 event for a correct model), and the
// simulations are seeded, so the test is deterministic. The demo-like
// blocking case also shows that the simulation tells the finite model
// from the steady-state one.
func TestJobMonteCarlo(t *testing.T) {
	nbLv := twoLevels(0.15, 0.05)
	nbLv.Cost = []float64{0.1, 0.1}
	fast := Levels{Rates: []float64{0.6, 0.2}, Cost: []float64{0.1, 0.1}, Restart: []float64{0.3, 0.6}}
	one := Levels{Rates: []float64{0.25}, Cost: []float64{0.15}, Restart: []float64{0.4}}
	cases := []struct {
		name string
		s    Scheme
		k    int
		job  Job
		// steady: the steady-state model must be out of the simulation's
		// error (the end effect is visible).
		steady bool
	}{
		{"blocking Moody, demo-like", Scheme{Levels: twoLevels(0.15, 0)}, 2, Job{Work: 7.2, Lead: 0.3}, true},
		{"blocking Moody, λ2 > 0", Scheme{Levels: twoLevels(0.15, 0.05)}, 3, Job{Work: 9.5}, false},
		{"blocking retry, λ2 > 0", Scheme{Levels: twoLevels(0.15, 0.05), Options: BlockingOptions{RetryRecovery: true}}, 2, Job{Work: 7.2, Lead: 0.3}, false},
		{"blocking L1-protected", Scheme{Levels: twoLevels(0.2, 0.05), Options: BlockingOptions{L1ProtectedFirst: true}}, 3, Job{Work: 6.5}, false},
		{"blocking K = 1", Scheme{Levels: twoLevels(0.15, 0.05)}, 1, Job{Work: 4.4}, false},
		{"blocking, W < t", Scheme{Levels: twoLevels(0.3, 0.1)}, 2, Job{Work: 0.7, Lead: 0.2}, false},
		{"one level", Scheme{Levels: one}, 0, Job{Work: 7.7, Lead: 0.4}, false},
		{"non-blocking m < n", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 1.5, Alpha: 0.3}, 3, Job{Work: 8.4, Lead: 0.3}, false},
		{"non-blocking m = n", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 2.5, Alpha: 0.3}, 2, Job{Work: 7.2}, false},
		{"non-blocking retry", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 1.5, Alpha: 0.3, Options: BlockingOptions{RetryRecovery: true}}, 2, Job{Work: 7.2, Lead: 0.3}, false},
		{"non-blocking m = n, last period all slowed", Scheme{Levels: nbLv, NonBlocking: true, FlushLatency: 2.5, Alpha: 0.5}, 2, Job{Work: 5.5}, false},
		{"non-blocking, W < t", Scheme{Levels: fast, NonBlocking: true, FlushLatency: 1.5, Alpha: 0.3}, 2, Job{Work: 0.8}, false},
	}
	const samples = 40000
	for ci, c := range cases {
		sch := Schedule{Interval: 1}
		if c.k > 0 {
			sch.Counts = []int{c.k - 1}
		}
		res, err := c.s.EvaluateJob(sch, c.job)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mc := newMCJob(c.s, sch, c.job)
		rng := rand.New(rand.NewPCG(uint64(ci)+1, 0x5eed))
		var sum, sum2 float64
		for range samples {
			x := mc.run(rng)
			sum += x
			sum2 += x * x
		}
		mean := sum / samples
		se := math.Sqrt((sum2/samples - mean*mean) / (samples - 1))
		if perJob := float64(mc.failures) / samples; perJob < 0.5 {
			t.Errorf("%s: %.2f failures a job: too few to test the model", c.name, perJob)
		}
		z := (mean - res.Seconds) / se
		t.Logf("%s: model %.5f s, simulated %.5f ± %.5f s (z = %+.2f), %.2f failures a job", c.name, res.Seconds, mean, se, z, float64(mc.failures)/samples)
		if math.Abs(z) > 4.5 {
			t.Errorf("%s: model %g s, simulation %g ± %g s (z = %.2f)", c.name, res.Seconds, mean, se, z)
		}
		if c.steady {
			ss, err := c.s.Evaluate(sch)
			if err != nil {
				t.Fatal(err)
			}
			steady := (c.job.Work + c.job.Lead) / ss.Efficiency
			if zs := (mean - steady) / se; math.Abs(zs) < 10 {
				t.Errorf("%s: the steady-state model's %g s is within %.1f standard errors of the simulation: the test cannot tell the models apart", c.name, steady, zs)
			}
		}
	}
}
