package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/ckpt/ckpt/model"
)

func TestEveryNCheckpointsExactlyAtMultiples(t *testing.T) {
	for _, start := range []int64{0, 250, 300} {
		rng := rand.New(rand.NewPCG(1, uint64(start)))
		res := sim{
			policy: Policy{Kind: Steps, Steps: 100},
			ranks:  4,
			start:  start,
			steps:  10_000,
			stepTime: func(int, int64, time.Duration) time.Duration {
				return time.Duration(1+rng.IntN(20)) * time.Millisecond
			},
			cost: constCost(3 * time.Second),
		}.run(t)
		var want []int64
		for s := (start/100 + 1) * 100; s <= start+10_000; s += 100 {
			want = append(want, s)
		}
		if !reflect.DeepEqual(res.decisions, want) {
			t.Fatalf("start %d: decision rounds at %v..., want exactly the multiples of 100 after the start", start, head(res.decisions))
		}
		if len(res.ckpts) != len(want) {
			t.Fatalf("start %d: %d checkpoints in %d rounds, want one per round", start, len(res.ckpts), len(want))
		}
		for i, c := range res.ckpts {
			if c.step != want[i] {
				t.Fatalf("start %d: checkpoint %d at step %d, want %d", start, i, c.step, want[i])
			}
		}
		if res.state.Decisions != int64(len(want)) || res.state.Checkpoints != int64(len(want)) {
			t.Errorf("state counts %+v, want %d rounds and checkpoints", res.state, len(want))
		}
	}
}

func TestEveryNSkippedSteps(t *testing.T) {
	// An application that calls NeedCheckpoint only now and then still
	// checkpoints at the first call past each due step.
	p := Policy{Kind: Steps, Steps: 100}
	l := NewLocal(p, 0, 0)
	var st State
	var got []int64
	for step := int64(0); step <= 1000; step += 37 {
		if !l.Need(step) {
			continue
		}
		var d Decision
		d, st = Decide(p, st, []Report{l.Report(step, time.Duration(step)*time.Millisecond)})
		l.Apply(d)
		if d.Checkpoint {
			got = append(got, step)
		}
	}
	want := []int64{111, 222, 333, 407, 518, 629, 703, 814, 925}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("checkpoints at %v, want %v", got, want)
	}
}

func TestEveryTVaryingSpeed(t *testing.T) {
	const T, period = 30 * time.Second, time.Second
	rng := rand.New(rand.NewPCG(7, 7))
	// The pace swings by ±50 % over a 7 s cycle, and each rank jitters by
	// up to 20 % per step; the slowest rank sets the pace.
	stepTime := func(r int, s int64, now time.Duration) time.Duration {
		base := 10e6 * (1 + 0.5*math.Sin(2*math.Pi*now.Seconds()/7))
		return time.Duration(base * (1 + 0.2*rng.Float64()))
	}
	res := sim{
		policy:   Policy{Kind: Time, Period: T, DecisionPeriod: period},
		ranks:    3,
		steps:    40_000,
		stepTime: stepTime,
		cost:     constCost(2 * time.Second),
	}.run(t)
	if len(res.ckpts) < 10 {
		t.Fatalf("only %d checkpoints in %v", len(res.ckpts), res.end)
	}
	const maxStep = 18 * time.Millisecond
	// A round is predicted at most a DecisionPeriod ahead from the step
	// time measured over the last two windows; the pace can slow by up to
	// 45 % within a second here, so the round may come up to about half a
	// period later than predicted (over 200 seeds of this test: at most
	// 1.14 periods late).
	late := period * 3 / 2
	for i, c := range res.ckpts {
		if c.since < T-maxStep/2 || c.since > T+late {
			t.Errorf("checkpoint %d at step %d came %v after the previous one ended, want within [%v, %v]", i, c.step, c.since, T-maxStep/2, T+late)
		}
		if c.interval != T {
			t.Errorf("checkpoint %d: interval %v, want %v", i, c.interval, T)
		}
	}
	// Rounds about once per second of compute, plus the ramp-up and one
	// due round per checkpoint.
	compute := res.end - time.Duration(len(res.ckpts))*2*time.Second
	perSecond := float64(len(res.decisions)) / compute.Seconds()
	if perSecond < 0.9 || perSecond > 1.3 {
		t.Errorf("%d decision rounds in %v of compute (%.2f/s), want about 1/s", len(res.decisions), compute, perSecond)
	}
}

func TestAutoConvergesToDaly(t *testing.T) {
	const mtti = 1000 * time.Second
	const step = 5 * time.Millisecond
	costs := func(n int) time.Duration {
		if n < 10 {
			return 2 * time.Second
		}
		return 8 * time.Second
	}
	res := sim{
		policy:   Policy{Kind: Auto, MTTI: mtti},
		ranks:    2,
		steps:    450_000,
		stepTime: constStep(step),
		cost:     costs,
	}.run(t)
	if len(res.ckpts) < 22 {
		t.Fatalf("only %d checkpoints", len(res.ckpts))
	}
	near := func(a, b, tol time.Duration) bool { return a-b <= tol && b-a <= tol }
	// Before any measurement the interval is the decision period, shorter
	// than Daly's for the assumed cost (44 s here): the first checkpoint is
	// what measures the cost.
	if want := DefaultDecisionPeriod; res.ckpts[0].interval != want || AutoInterval(DefaultAssumedCost, mtti) <= want {
		t.Errorf("first interval %v, want %v (the decision period, below Daly's %v for the assumed cost)",
			res.ckpts[0].interval, want, AutoInterval(DefaultAssumedCost, mtti))
	}
	if !near(res.ckpts[0].since, DefaultDecisionPeriod, 2*step) {
		t.Errorf("first checkpoint %v into the launch, want within a step of %v", res.ckpts[0].since, DefaultDecisionPeriod)
	}
	daly := func(cost float64) time.Duration { return time.Duration(model.Daly(cost, mtti.Seconds()) * 1e9) }
	// With the cost measured at 2 s, the interval is model.Daly(2, 1000) and
	// checkpoints come that far apart, to the step.
	for i := 1; i <= 10; i++ {
		c := res.ckpts[i]
		if !near(c.interval, daly(2), time.Microsecond) {
			t.Errorf("checkpoint %d: interval %v, want model.Daly(2 s, 1000 s) = %v", i, c.interval, daly(2))
		}
		if !near(c.since, daly(2), step) {
			t.Errorf("checkpoint %d: %v after the previous one, want %v", i, c.since, daly(2))
		}
	}
	// The cost rose to 8 s at checkpoint 10; the interval follows.
	if c := res.ckpts[12]; c.interval <= daly(2)+10*time.Second {
		t.Errorf("two checkpoints after the cost rose, interval still %v", c.interval)
	}
	lastC := res.ckpts[len(res.ckpts)-1]
	if rel := math.Abs(float64(lastC.interval-daly(8))) / float64(daly(8)); rel > 1e-3 {
		t.Errorf("interval after %d checkpoints at 8 s: %v, want model.Daly(8 s, 1000 s) = %v", len(res.ckpts)-10, lastC.interval, daly(8))
	}
	if !near(res.state.Cost, 8*time.Second, 10*time.Millisecond) {
		t.Errorf("smoothed cost %v, want 8 s", res.state.Cost)
	}
	if !near(lastC.since, lastC.interval, 2*step) {
		t.Errorf("last checkpoint %v after the previous one, want %v", lastC.since, lastC.interval)
	}
}

func TestEstimateMTTI(t *testing.T) {
	for _, c := range []struct {
		runtime  time.Duration
		failures int64
		want     time.Duration
	}{
		{1000 * time.Second, 0, 1000 * time.Second},
		{1000 * time.Second, 1, 500 * time.Second},
		{1000 * time.Second, 9, 100 * time.Second},
		{0, 0, 1},
		{time.Hour, -1, time.Hour},
	} {
		if got := EstimateMTTI(c.runtime, c.failures); got != c.want {
			t.Errorf("EstimateMTTI(%v, %d) = %v, want %v", c.runtime, c.failures, got, c.want)
		}
	}
}

func TestAutoUsesFailureHistory(t *testing.T) {
	p := Policy{Kind: Auto}
	st := State{Cost: 2 * time.Second}
	// Launches that each fail after 100 s, asked 50 s into a launch: the
	// estimate (100k + 50)/(k + 1) tends to 100 s from below, and the
	// interval to model.Daly(2, 100).
	prev := time.Duration(0)
	for k := range 20 {
		d, _ := Decide(p, st, []Report{{Step: 10, Elapsed: 50 * time.Second, StepTime: time.Millisecond, Window: 10}})
		mtti := (st.PastRuntime + 50*time.Second) / time.Duration(st.Failures+1)
		want := time.Duration(math.Round(model.Daly(2, mtti.Seconds()) * 1e9))
		if d.Interval != want {
			t.Fatalf("after %d failures: interval %v, want model.Daly(2 s, %v) = %v", k, d.Interval, mtti, want)
		}
		if d.Interval < prev {
			t.Errorf("after %d failures the interval shrank: %v < %v", k, d.Interval, prev)
		}
		prev = d.Interval
		st = st.NextLaunch(100*time.Second, true)
	}
	if st.Failures != 20 || st.PastRuntime != 2000*time.Second || st.Cost != 2*time.Second || st.Decisions != 0 {
		t.Errorf("state after 20 launches: %+v", st)
	}
	if lim := time.Duration(model.Daly(2, 100) * 1e9); prev > lim || prev < lim-lim/20 {
		t.Errorf("interval after 20 failures %v, want a little below %v", prev, lim)
	}
	// A launch that stops without failing adds run time but no failure.
	if s := (State{Failures: 2}).NextLaunch(time.Minute, false); s.Failures != 2 || s.PastRuntime != time.Minute {
		t.Errorf("NextLaunch without failure: %+v", s)
	}
}

func TestDecisionRoundsStayFew(t *testing.T) {
	// 10⁶ steps of 1 ms: about one round per second of compute.
	for _, p := range []Policy{
		{Kind: Time, Period: time.Minute},
		{Kind: Auto, MTTI: 6 * time.Hour},
	} {
		res := sim{policy: p, steps: 1_000_000, stepTime: constStep(time.Millisecond), cost: constCost(time.Second)}.run(t)
		n := len(res.decisions)
		if n < 1000 || n > 1050 {
			t.Errorf("%v: %d decision rounds for 10⁶ steps of 1 ms (%d checkpoints), want about 1000", p, n, len(res.ckpts))
		}
	}
}

func TestFirstRoundsRamp(t *testing.T) {
	// The first round measures one step; later gaps grow at most to twice
	// the measured window, then settle at a DecisionPeriod's worth.
	res := sim{policy: Policy{Kind: Time, Period: time.Hour}, steps: 20_000, stepTime: constStep(time.Millisecond), cost: constCost(time.Second)}.run(t)
	want := []int64{1, 3, 9, 25, 69, 189, 517, 1413, 2413, 3413}
	if got := res.decisions[:len(want)]; !reflect.DeepEqual(got, want) {
		t.Errorf("first decision steps %v, want %v", got, want)
	}
}

func TestHalt(t *testing.T) {
	for _, p := range []Policy{{Kind: Steps, Steps: 1000}, {Kind: Time, Period: time.Hour}, {Kind: None}} {
		base := sim{policy: p, ranks: 3, steps: 10_000, stepTime: constStep(time.Millisecond), cost: constCost(time.Second)}
		plain := base.run(t)
		base.haltAfter = 2500
		res := base.run(t)
		// The halt is seen at the first decision step from 2500 on.
		var want int64
		for _, s := range plain.decisions {
			if s >= 2500 {
				want = s
				break
			}
		}
		if res.halted != want {
			t.Errorf("%v: halted at step %d, want %d", p, res.halted, want)
		}
		if p.Kind == Steps && want != 3000 {
			t.Errorf("steps: halted at %d, want 3000", want)
		}
		if p.Kind == Time && (want < 2500 || want > 3500) {
			t.Errorf("time: halted at %d, want within a second of step 2500", want)
		}
		if p.Kind != None && (len(res.ckpts) == 0 || res.ckpts[len(res.ckpts)-1].step != want) {
			t.Errorf("%v: no checkpoint at the halt", p)
		}
		if p.Kind == None && (len(res.decisions) != 0 || res.last != Decision{}) {
			t.Errorf("none: %d decision rounds", len(res.decisions))
		}
	}
	// None still reports a halt if a round is held.
	d, _ := Decide(Policy{}, State{}, []Report{{Step: 5, Halt: true}})
	if d != (Decision{Halt: true, NextDecisionStep: Never}) {
		t.Errorf("none with a halt request: %+v", d)
	}
}

func TestAutoFirstLaunchEstimate(t *testing.T) {
	// With no MTTI and no history the estimate is the short elapsed time, so
	// the first round checkpoints at once and measures the cost; the
	// interval then grows with the failure-free run time.
	res := sim{policy: Policy{Kind: Auto}, steps: 200_000, stepTime: constStep(time.Millisecond), cost: constCost(100 * time.Millisecond)}.run(t)
	if len(res.ckpts) == 0 || res.ckpts[0].step != 1 {
		t.Fatalf("first checkpoint at %v, want step 1", res.ckpts[:min(1, len(res.ckpts))])
	}
	for i := 2; i < len(res.ckpts); i++ {
		if res.ckpts[i].interval < res.ckpts[i-1].interval {
			t.Errorf("interval shrank without failures: %v then %v", res.ckpts[i-1].interval, res.ckpts[i].interval)
		}
	}
	// About √(2T/δ) checkpoints in T.
	T := res.end.Seconds()
	if want := math.Sqrt(2 * T / 0.1); float64(len(res.ckpts)) > 1.5*want {
		t.Errorf("%d checkpoints in %.0f s, want about %.0f", len(res.ckpts), T, want)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() simResult {
		rng := rand.New(rand.NewPCG(3, 4))
		return sim{
			policy: Policy{Kind: Auto, MTTI: 300 * time.Second},
			ranks:  4,
			steps:  50_000,
			stepTime: func(int, int64, time.Duration) time.Duration {
				return time.Duration(500+rng.IntN(1500)) * time.Microsecond
			},
			cost: func(n int) time.Duration { return time.Duration(1+n%3) * time.Second },
		}.run(t)
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same inputs differ")
	}
}

func TestDecideProperties(t *testing.T) {
	policies := []Policy{
		{Kind: None},
		{Kind: Steps, Steps: 1},
		{Kind: Steps, Steps: 977},
		{Kind: Time, Period: 30 * time.Second},
		{Kind: Time, Period: time.Nanosecond},
		{Kind: Auto},
		{Kind: Auto, MTTI: time.Hour, DecisionPeriod: 10 * time.Second},
	}
	check := func(seed uint64, n uint8) bool {
		rng := rand.New(rand.NewPCG(seed, 0))
		p := policies[rng.IntN(len(policies))]
		st := State{Cost: time.Duration(rng.Int64N(int64(time.Minute))), Failures: rng.Int64N(5), PastRuntime: time.Duration(rng.Int64N(int64(time.Hour)))}
		step := rng.Int64N(1 << 40)
		if rng.IntN(10) == 0 {
			step = Never - rng.Int64N(3)
		}
		reports := make([]Report, 1+int(n%16))
		for i := range reports {
			r := Report{
				Step:            step,
				Elapsed:         time.Duration(rng.Int64N(int64(time.Hour))),
				SinceCheckpoint: time.Duration(rng.Int64N(int64(time.Minute))),
				CheckpointCost:  time.Duration(rng.Int64N(3)) * time.Second,
				Halt:            rng.IntN(50) == 0,
			}
			if rng.IntN(5) > 0 {
				r.StepTime = 1 + time.Duration(rng.Int64N(int64(time.Second)))
				r.Window = 1 + rng.Int64N(10_000)
			}
			reports[i] = r
		}
		if CheckReports(reports) != nil {
			return false
		}
		d, st2 := Decide(p, st, reports)
		// Order does not matter.
		shuffled := append([]Report(nil), reports...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		d2, st3 := Decide(p, st, shuffled)
		if d != d2 || st2 != st3 {
			return false
		}
		// The next round is later, unless the step counter is exhausted.
		if d.NextDecisionStep <= step && step != Never {
			return false
		}
		if p.Kind == None && (d.Checkpoint || d.NextDecisionStep != Never) {
			return false
		}
		if p.Kind == Steps && (!d.Checkpoint || (d.NextDecisionStep != Never && d.NextDecisionStep%p.Steps != 0)) {
			return false
		}
		return st2.Decisions == st.Decisions+1 && (st2.Cost > 0) == (st.Cost > 0 || anyCost(reports))
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func anyCost(rs []Report) bool {
	for _, r := range rs {
		if r.CheckpointCost > 0 {
			return true
		}
	}
	return false
}

func TestCheckReports(t *testing.T) {
	ok := Report{Step: 10, Elapsed: time.Second, StepTime: time.Millisecond, Window: 5}
	if err := CheckReports([]Report{ok, ok}); err != nil {
		t.Fatal(err)
	}
	other := ok
	other.Step = 11
	for name, rs := range map[string][]Report{
		"empty":          nil,
		"steps differ":   {ok, other},
		"negative step":  {{Step: -1}},
		"negative cost":  {{Step: 1, CheckpointCost: -1}},
		"window no time": {{Step: 1, Window: 3}},
		"time no window": {{Step: 1, StepTime: 3}},
		"negative since": {{Step: 1, SinceCheckpoint: -time.Second}},
	} {
		if err := CheckReports(rs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLocalMeasuresStepTime(t *testing.T) {
	p := Policy{Kind: Time, Period: time.Minute}
	l := NewLocal(p, 40, 0)
	if l.Next() != 41 || l.Need(40) || !l.Need(41) {
		t.Fatalf("first decision step %d, want 41", l.Next())
	}
	ms := time.Millisecond
	r := l.Report(41, 2*ms)
	if r.StepTime != 2*ms || r.Window != 1 || r.Elapsed != 2*ms || r.SinceCheckpoint != 2*ms || r.CheckpointCost != 0 {
		t.Fatalf("first report %+v", r)
	}
	l.Apply(Decision{Checkpoint: true, NextDecisionStep: 50})
	l.Checkpointed(2*ms, 1002*ms) // a 1 s checkpoint
	// The step after it reports its cost, with the step-time window left
	// open: 1 step of 1 ms and the 2 ms one before.
	if l.Next() != 42 {
		t.Fatalf("next decision step %d after a checkpoint at 41, want 42", l.Next())
	}
	r = l.Report(42, 1003*ms)
	if r.Window != 2 || r.StepTime != 1500*time.Microsecond || r.CheckpointCost != time.Second || r.SinceCheckpoint != ms {
		t.Fatalf("report after the checkpoint %+v", r)
	}
	l.Apply(Decision{NextDecisionStep: 50})
	// 9 steps of 1 ms after it: the checkpoint is not step time, and its
	// cost was reported already.
	r = l.Report(50, 1011*ms)
	if r.Window != 10 || r.StepTime != 1100*time.Microsecond || r.CheckpointCost != 0 || r.SinceCheckpoint != 9*ms {
		t.Fatalf("second report %+v", r)
	}
	l.Apply(Decision{NextDecisionStep: 60})
	r = l.Report(60, 1021*ms)
	if r.Window != 19 || r.StepTime != ms || r.CheckpointCost != 0 || r.SinceCheckpoint != 19*ms {
		t.Fatalf("third report %+v", r)
	}
	// A bad answer cannot stall the rank at one step.
	l.Apply(Decision{NextDecisionStep: 3})
	if l.Next() != 61 {
		t.Errorf("next %d after a stale answer, want 61", l.Next())
	}
	if FirstDecisionStep(Policy{Kind: None}, 5) != Never || NewLocal(Policy{}, 5, 0).Need(1<<62) {
		t.Error("none has decision rounds")
	}
	if got := FirstDecisionStep(Policy{Kind: Steps, Steps: 100}, 100); got != 200 {
		t.Errorf("steps first decision after 100: %d", got)
	}
	if got := FirstDecisionStep(Policy{Kind: Steps, Steps: 100}, Never-5); got != Never {
		t.Errorf("steps first decision near the end of int64: %d", got)
	}
}

func head(s []int64) []int64 { return s[:min(len(s), 8)] }

func TestCostSurvivesALaunchCutShort(t *testing.T) {
	// A launch that fails one step after its first checkpoint must still
	// hand the measured cost to the next launch: otherwise every launch
	// shorter than the interval for the assumed cost starts again with
	// that cost and never checkpoints (seen in ckpt demo: launches of
	// 0.6–1.5 s at Daly's 1.6 s for the assumed 1 s, against 0.45 s for the
	// 45 ms measured).
	const step = 5 * time.Millisecond
	const cost = 40 * time.Millisecond
	for _, p := range []Policy{{Kind: Auto, MTTI: 2500 * time.Millisecond}, {Kind: Time, Period: 300 * time.Millisecond}} {
		base := sim{policy: p, ranks: 3, steps: 2000, stepTime: constStep(step), cost: constCost(cost)}
		full := base.run(t)
		if len(full.ckpts) == 0 {
			t.Fatalf("%v: no checkpoint in %d steps", p, base.steps)
		}
		first := full.ckpts[0].step
		if !slices.Contains(full.decisions, first+1) {
			t.Errorf("%v: no decision round right after the checkpoint at step %d: rounds %v", p, first, full.decisions)
		}
		base.steps = first + 1 // the launch fails after this step
		cut := base.run(t)
		if cut.state.Cost != cost {
			t.Errorf("%v: launch cut one step after its first checkpoint hands on cost %v, want %v", p, cut.state.Cost, cost)
		}
		next := cut.state.NextLaunch(cut.end, true)
		if next.Cost != cost {
			t.Errorf("%v: the next launch starts with cost %v, want %v", p, next.Cost, cost)
		}
		if p.Kind == Auto {
			base.start, base.steps, base.state = first, 2000, next
			again := base.run(t)
			if want := AutoInterval(cost, p.MTTI); again.ckpts[0].interval != want {
				t.Errorf("next launch's first interval %v, want Daly's %v for the measured cost", again.ckpts[0].interval, want)
			}
		}
	}
	// Steps policies hold no extra rounds: their rounds always checkpoint.
	res := sim{policy: Policy{Kind: Steps, Steps: 100}, steps: 1000, stepTime: constStep(step), cost: constCost(cost)}.run(t)
	if want := []int64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}; !reflect.DeepEqual(res.decisions, want) {
		t.Errorf("every 100 steps: decision rounds %v, want %v", res.decisions, want)
	}
}

// TestDecideNow: a round asked to checkpoint at once checkpoints where
// Decide would not, without halting, and the interval starts from it.
func TestDecideNow(t *testing.T) {
	reports := []Report{
		{Step: 100, Elapsed: time.Minute, SinceCheckpoint: 10 * time.Second, StepTime: 10 * time.Millisecond, Window: 50},
		{Step: 100, Elapsed: time.Minute, SinceCheckpoint: 10 * time.Second, StepTime: 10 * time.Millisecond, Window: 50},
	}
	for _, p := range []Policy{{Kind: Time, Period: time.Hour}, {Kind: Auto, MTTI: 1000 * time.Hour}} {
		plain, _ := Decide(p, State{Cost: time.Second}, reports)
		if plain.Checkpoint {
			t.Fatalf("%v: Decide checkpoints 10 s into an interval of %v", p, plain.Interval)
		}
		d, st := DecideNow(p, State{Cost: time.Second}, reports)
		if !d.Checkpoint || d.Halt || st.Checkpoints != 1 || st.Decisions != 1 {
			t.Errorf("%v: DecideNow = %+v, state %+v; want a checkpoint, no halt, counted", p, d, st)
		}
		if d.NextDecisionStep <= 100 || d.NextDecisionStep > plain.NextDecisionStep {
			t.Errorf("%v: next round at %d after a checkpoint at 100; Decide's was %d", p, d.NextDecisionStep, plain.NextDecisionStep)
		}
	}
	steps := Policy{Kind: Steps, Steps: 100}
	if a, b := fmt.Sprint(Decide(steps, State{}, reports)), fmt.Sprint(DecideNow(steps, State{}, reports)); a != b {
		t.Errorf("steps: DecideNow %s, Decide %s; a round of Steps always checkpoints", b, a)
	}
	if d, _ := DecideNow(Policy{Kind: None}, State{}, reports); d.Checkpoint || d.Halt {
		t.Errorf("none: DecideNow = %+v, want no checkpoint", d)
	}
}
