package sim

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/model"
)

// The simulator's figure of merit is events per second on one core (issue
// 6 asks for at least 10 million). Each benchmark runs whole replications
// on the benchmark's goroutine, one worker, and reports ns/event and
// events/s besides ns/op (one replication). The loops allocate nothing:
// allocs/op must stay 0.

func benchEvents(b *testing.B, cfg Config) {
	b.Helper()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	w := &worker{cfg: &cfg}
	switch cfg.Strategy {
	case Coordinated:
		w.co = newCoordinated(&cfg)
	case NonBlocking:
		w.nb = newNonBlocking(&cfg)
	case Uncoordinated:
		w.un = newUncoordinated(&cfg)
	}
	var stop atomic.Bool
	var events int64
	r := 0
	b.ReportAllocs()
	for b.Loop() {
		s, ok := w.replicate(1, r, &stop, 1e12)
		if !ok {
			b.Fatal("replication did not finish")
		}
		events += s.events
		r++
	}
	ns := float64(b.Elapsed().Nanoseconds())
	b.ReportMetric(ns/float64(events), "ns/event")
	b.ReportMetric(float64(events)/ns*1e9, "events/s")
}

// 003 §4.1 at MTTI 6 h: 500 days, τ = 55 min, δ = R = 5 min (about 13 100
// intervals and 2 400 failures per replication).
func BenchmarkEventsSingleLevel(b *testing.B) {
	benchEvents(b, Config{Work: 500 * day, Levels: model.Levels{Rates: []float64{1 / 21600.0}, Cost: []float64{300}, Restart: []float64{300}},
		Schedule: model.Schedule{Interval: 3300}})
}

// The same with Weibull (shape 0.7) times between failures: one math.Pow
// more per failure.
func BenchmarkEventsSingleLevelWeibull(b *testing.B) {
	benchEvents(b, Config{Work: 500 * day, Levels: model.Levels{Rates: []float64{1 / 21600.0}, Cost: []float64{300}, Restart: []float64{300}},
		Schedule: model.Schedule{Interval: 3300}, Dist: Dist{Shape: 0.7}})
}

// SPEC-markov §7's worked example, 1000 periods: a failure every 4000 s
// against 630 s intervals, so failures and recoveries are a fifth of the
// events.
func BenchmarkEventsBlocking2Level(b *testing.B) {
	cfg := workedExample()
	cfg.Work = 600 * 5 * 1000
	benchEvents(b, cfg)
}

// TSUBAME2.0 at its blocking optimum (SPEC §8, F = C = 1): 33 intervals per
// period and a failure every 14 h, the rare-failure regime.
func BenchmarkEventsBlockingTSUBAME(b *testing.B) {
	cfg := sato(1, 1, false)
	cfg.Schedule = model.Schedule{Interval: 2507.37, Counts: []int{32}}
	cfg.Work = 2507.37 * 33 * 300
	benchEvents(b, cfg)
}

func BenchmarkEventsBlocking3Level(b *testing.B) {
	benchEvents(b, Config{Work: 600 * 12 * 500, Levels: model.Levels{Rates: []float64{2e-4, 5e-5, 5e-6}, Cost: []float64{30, 200, 1000}, Restart: []float64{40, 300, 1500}},
		Schedule: model.Schedule{Interval: 600, Counts: []int{3, 2}}})
}

func BenchmarkEventsNonBlocking(b *testing.B) {
	cfg := nonBlockingExample()
	cfg.Work = 600 * 5 * 1000
	benchEvents(b, cfg)
}

// 003 Table 2's 100 processes (4×25): only failures and the waits they
// impose are events; each failure touches its process and 4 dependents.
func BenchmarkEventsUncoordinated(b *testing.B) {
	p, _ := UniformP(0.05, 100)
	deps, _ := DependentsFromP(p)
	benchEvents(b, Config{Strategy: Uncoordinated, Work: 2e5, Levels: model.Levels{Rates: []float64{0.01}, Cost: []float64{5.284}, Restart: []float64{5.33}},
		Schedule: model.Schedule{Interval: 137.76}, Detect: 0.5, Dependents: deps, LogOverhead: 0.0476})
}

// Run on every core: 64 replications of the worked example per op.
func BenchmarkRunParallel(b *testing.B) {
	cfg := workedExample()
	cfg.Work = 600 * 5 * 1000
	var events int64
	for b.Loop() {
		r, err := Run(context.Background(), cfg, Replications(64))
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/float64(b.Elapsed().Nanoseconds())*1e9, "events/s")
}

// The machine's own unit: one exponential draw (a PCG output and a
// math.Log), which every failure costs. The event figures read as a
// fraction of it.
func BenchmarkMachineDraw(b *testing.B) {
	cfg := Config{Levels: model.Levels{Rates: []float64{1}}}
	var c clock
	c.reset(&cfg, 1, 0)
	s := 0.0
	for b.Loop() {
		s += c.draw(0)
	}
	if s < 0 {
		b.Fatal(s)
	}
}
