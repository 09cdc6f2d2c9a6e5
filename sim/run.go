package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ckpt/ckpt/model"
)

// Option configures Run.
type Option func(*options)

type options struct {
	replications int
	seed         uint64
	workers      int
	progress     func(done, total int)
	observe      func(r int, s Sample)
	maxEvents    int64
}

func defaults() options {
	return options{replications: 1000, seed: 1, workers: runtime.GOMAXPROCS(0), maxEvents: 1e9}
}

// Replications sets the number of independent replications (default 1000,
// at least 2 for a confidence interval).
func Replications(n int) Option { return func(o *options) { o.replications = n } }

// Seed sets the seed (default 1). Replication r draws its failures from its
// own PCG stream derived from (seed, r), so a seed gives the same Result
// whatever the number of workers.
func Seed(s uint64) Option { return func(o *options) { o.seed = s } }

// Workers sets how many goroutines run replications (default GOMAXPROCS).
func Workers(n int) Option { return func(o *options) { o.workers = n } }

// Progress registers f, called after every batch of replications with the
// number done so far and the total. Calls come from the workers, one at a
// time (never concurrently), done increasing; f must return quickly.
func Progress(f func(done, total int)) Option { return func(o *options) { o.progress = f } }

// Sample is one replication: one run of the job.
type Sample struct {
	Seconds  float64 // its wall-clock run time
	Failures []int   // its failures per level (index level-1)
}

// Observe registers f, called with every replication r (0 ≤ r <
// replications) that completes, for what the averages do not show: one
// run's own figures. Calls come from the workers, one at a time (never
// concurrently), in no particular order; f must return quickly.
func Observe(f func(r int, s Sample)) Option { return func(o *options) { o.observe = f } }

// MaxEvents bounds the events of one replication (default 10⁹). A
// replication that needs more fails the run with ErrTooLong: failures
// arrive faster than the job can progress, or the job is enormous.
func MaxEvents(n int64) Option { return func(o *options) { o.maxEvents = n } }

// ErrTooLong is wrapped by Run's error when a replication exceeds its event
// budget (MaxEvents).
var ErrTooLong = errors.New("replication exceeded its event budget")

// Estimate is a mean over replications and the half-width of its 95%
// confidence interval (Student's t; NaN for one replication).
type Estimate struct {
	Mean float64
	CI95 float64
}

// Result is what Run measured, per job (per replication), averaged over the
// replications.
type Result struct {
	Replications int
	// Seconds is the wall-clock run time of the job. For Uncoordinated the
	// job ends when its last process ends.
	Seconds Estimate
	// Efficiency is Work / Seconds.Mean, the ideal time over the expected
	// time, as the Markov models define it (a ratio of means, not a mean of
	// ratios); its interval follows from Seconds' by the delta method.
	Efficiency Estimate
	// Lost is the execution (computation, checkpoints, slowdown) discarded
	// by rollbacks; Restart the time spent recovering, failed attempts
	// included; Checkpoint the checkpoint writes and flush slowdown of the
	// execution that survived. For Coordinated and NonBlocking,
	// Seconds = Work + Checkpoint + Restart + Lost in every replication.
	Lost, Restart, Checkpoint Estimate
	// Uncoordinated only, per process (means over the processes): the
	// completion time and the efficiency it gives (what 003's model
	// describes), and the time spent waiting for other processes. Restart
	// includes the re-execution of lost work (003's T_r).
	ProcessSeconds, ProcessEfficiency, Wait Estimate
	// AppliedError and AppliedAbsError (Coordinated, one level only; zero
	// otherwise) are the mean and the mean absolute value of one run's
	// relative error against Daly's model (Oldfield et al. 2007, eq. 1) at
	// the failure rate that run met: Work/Seconds over the model's
	// efficiency at MTTI = Seconds / failures (τ/(τ + δ) without a
	// failure), minus 1. That is how `ckpt demo` compares one real run
	// with the model (model_error_applied), so AppliedAbsError is the
	// error one run shows by chance alone, where the failures fell, when
	// the failure process is exactly the model's; AppliedError is the
	// bias of that comparison.
	AppliedError, AppliedAbsError Estimate
	// Failures[l-1] and Restarts[l-1] count, per job, the failures of
	// level l and the completed recoveries from a level-l checkpoint
	// (Uncoordinated: the failures that struck a process still running,
	// and the recoveries of all processes).
	Failures, Restarts []Estimate
	// Events is the number of events simulated in all replications:
	// interval completions, failures and recoveries (Coordinated,
	// NonBlocking); failures and the waits they impose (Uncoordinated,
	// whose interval ends are not events).
	Events int64
}

// chunk is the number of consecutive replications one worker runs as a
// unit; the statistics of a chunk are merged in chunk order, so that the
// result does not depend on the number of workers.
const chunk = 8

// metric indexes of a sample in the accumulators.
const (
	mSeconds = iota
	mLost
	mRestart
	mCheckpoint
	mWait
	mProcess
	mAppliedErr
	mAppliedAbsErr
	mFailures                               // then one per level
	mRestarts = mFailures + model.MaxLevels // then one per level
	nMetrics  = mRestarts + model.MaxLevels
)

// acc accumulates means and sums of squared deviations (Welford).
type acc struct {
	n      int
	mean   [nMetrics]float64
	m2     [nMetrics]float64
	events int64
}

func (a *acc) add(s *sample) {
	var x [nMetrics]float64
	x[mSeconds], x[mLost], x[mRestart], x[mCheckpoint], x[mWait], x[mProcess] = s.seconds, s.lost, s.restart, s.checkpoint, s.wait, s.process
	x[mAppliedErr], x[mAppliedAbsErr] = s.appliedErr, s.appliedAbsErr
	copy(x[mFailures:], s.failures[:])
	copy(x[mRestarts:], s.restarts[:])
	a.n++
	for i := range x {
		d := x[i] - a.mean[i]
		a.mean[i] += d / float64(a.n)
		a.m2[i] += d * (x[i] - a.mean[i])
	}
	a.events += s.events
}

// merge adds b's replications (Chan et al.'s parallel update).
func (a *acc) merge(b *acc) {
	if b.n == 0 {
		return
	}
	n := a.n + b.n
	for i := range a.mean {
		d := b.mean[i] - a.mean[i]
		a.mean[i] += d * float64(b.n) / float64(n)
		a.m2[i] += b.m2[i] + d*d*float64(a.n)*float64(b.n)/float64(n)
	}
	a.n = n
	a.events += b.events
}

func (a *acc) estimate(i int) Estimate {
	e := Estimate{Mean: a.mean[i], CI95: math.NaN()}
	if a.n > 1 {
		e.CI95 = TQuantile975(a.n-1) * math.Sqrt(math.Max(a.m2[i], 0)/float64(a.n-1)/float64(a.n))
	}
	return e
}

// TQuantile975 is the 0.975 quantile of Student's t with nu degrees of
// freedom: exact for nu ≤ 4, then the Cornish–Fisher expansion around the
// normal quantile to the fourth order (relative error below 1e-4 from nu = 5).
func TQuantile975(nu int) float64 {
	switch nu {
	case 1:
		return 12.706204736174698
	case 2:
		return 4.302652729749464
	case 3:
		return 3.182446305284263
	case 4:
		return 2.7764451051977934
	}
	const z = 1.959963984540054
	v := float64(nu)
	z2 := z * z
	z3 := z2 * z
	z5 := z3 * z2
	z7 := z5 * z2
	z9 := z7 * z2
	return z + (z3+z)/(4*v) + (5*z5+16*z3+3*z)/(96*v*v) + (3*z7+19*z5+17*z3-15*z)/(384*v*v*v) +
		(79*z9+776*z7+1482*z5-1920*z3-945*z)/(92160*v*v*v*v)
}

// ratio is W/X̄ with the delta-method interval W·hw/X̄².
func ratio(w float64, x Estimate) Estimate {
	return Estimate{Mean: w / x.Mean, CI95: w * x.CI95 / (x.Mean * x.Mean)}
}

// worker holds one goroutine's simulator state, reused across replications.
type worker struct {
	cfg *Config
	clk clock
	co  *coordinated
	nb  *nonBlocking
	un  *uncoordinated
}

func (w *worker) replicate(seed uint64, r int, stop *atomic.Bool, budget int64) (sample, bool) {
	var s sample
	w.clk.reset(w.cfg, seed, r)
	switch w.cfg.Strategy {
	case NonBlocking:
		return s, w.nb.run(&w.clk, &s, stop, budget)
	case Uncoordinated:
		return s, w.un.run(&w.clk, &s, stop, budget)
	}
	ok := w.co.run(&w.clk, &s, stop, budget)
	if ok && w.cfg.L() == 1 {
		s.appliedErr = appliedError(w.cfg, s.seconds, s.failures[0])
		s.appliedAbsErr = math.Abs(s.appliedErr)
	}
	return s, ok
}

// appliedError is the relative error of one run of cfg (one level) that
// took seconds and met failures against Daly's model (Oldfield et al. 2007,
// eq. 1) at the rate it met, MTTI = seconds / failures, and cfg's interval,
// cost and restart; without a failure, against τ/(τ + δ).
func appliedError(cfg *Config, seconds, failures float64) float64 {
	tau, cost := cfg.Interval, cfg.Cost[0]
	eff := tau / (tau + cost)
	if failures > 0 {
		_, eff = model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: tau, Cost: cost, MTTI: seconds / failures, Restart: cfg.Restart[0]})
	}
	return cfg.Work/seconds/eff - 1
}

// Run simulates cfg under failures, in independent replications run in
// parallel, and returns the estimates. It is deterministic: the same
// configuration, seed and replication count give the same Result, whatever
// the number of workers. It returns ctx's error if ctx ends first.
func Run(ctx context.Context, cfg Config, opts ...Option) (Result, error) {
	o := defaults()
	for _, f := range opts {
		f(&o)
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if o.replications < 2 {
		return Result{}, &model.ParamError{Param: "replications", Value: float64(o.replications), Reason: "at least 2 are needed for a confidence interval"}
	}
	o.workers = max(1, o.workers)
	if o.maxEvents <= 0 {
		o.maxEvents = defaults().maxEvents
	}

	chunks := (o.replications + chunk - 1) / chunk
	parts := make([]acc, chunks)
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		done     int
		firstErr error
		wg       sync.WaitGroup
	)
	var proto *uncoordinated
	if cfg.Strategy == Uncoordinated {
		proto = newUncoordinated(&cfg)
	}
	for range min(o.workers, chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{cfg: &cfg}
			switch cfg.Strategy {
			case Coordinated:
				w.co = newCoordinated(&cfg)
			case NonBlocking:
				w.nb = newNonBlocking(&cfg)
			case Uncoordinated:
				u := *proto
				u.procs = make([]proc, u.n)
				w.un = &u
			}
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || stop.Load() {
					return
				}
				lo, hi := c*chunk, min((c+1)*chunk, o.replications)
				for r := lo; r < hi; r++ {
					s, ok := w.replicate(o.seed, r, &stop, o.maxEvents)
					if !ok {
						mu.Lock()
						if firstErr == nil && ctx.Err() == nil {
							firstErr = fmt.Errorf("%w: replication %d ran more than %d events (failures arrive faster than the job progresses, or the job is too long)", ErrTooLong, r, o.maxEvents)
						}
						mu.Unlock()
						stop.Store(true)
						return
					}
					parts[c].add(&s)
					if o.observe != nil {
						fs := make([]int, cfg.L())
						for l := range fs {
							fs[l] = int(s.failures[l])
						}
						mu.Lock()
						o.observe(r, Sample{Seconds: s.seconds, Failures: fs})
						mu.Unlock()
					}
				}
				if o.progress != nil {
					mu.Lock()
					done += hi - lo
					o.progress(done, o.replications)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if firstErr != nil {
		return Result{}, firstErr
	}

	var total acc
	for i := range parts {
		total.merge(&parts[i])
	}
	res := Result{
		Replications:   total.n,
		Seconds:        total.estimate(mSeconds),
		Lost:           total.estimate(mLost),
		Restart:        total.estimate(mRestart),
		Checkpoint:     total.estimate(mCheckpoint),
		Wait:           total.estimate(mWait),
		ProcessSeconds: total.estimate(mProcess),
		Events:         total.events,
	}
	if cfg.Strategy == Coordinated && cfg.L() == 1 {
		res.AppliedError, res.AppliedAbsError = total.estimate(mAppliedErr), total.estimate(mAppliedAbsErr)
	}
	res.Efficiency = ratio(cfg.Work, res.Seconds)
	res.ProcessEfficiency = ratio(cfg.Work, res.ProcessSeconds)
	for l := 0; l < cfg.L(); l++ {
		res.Failures = append(res.Failures, total.estimate(mFailures+l))
		res.Restarts = append(res.Restarts, total.estimate(mRestarts+l))
	}
	return res, nil
}
