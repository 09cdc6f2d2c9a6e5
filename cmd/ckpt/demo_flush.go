package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

// The demo's flushing variants: the same job also flushes every K-th
// checkpoint to a shared tier of limited bandwidth, blocking (the ranks
// copy) or non-blocking (a staging server pulls while the job computes),
// and each run is set beside the multi-level Markov model's efficiency
// for the parameters it measured (SPEC-markov §4 blocking, §5
// non-blocking).

// flushDemo holds the settings the flushing runs share.
type flushDemo struct {
	interval  float64 // seconds of computation between checkpoints (policy "Ts")
	every     int     // K
	bandwidth float64 // the shared tier's bytes/s
	busy      string  // skip or wait
}

// flushRun is one flushing run and what the model expects of it.
type flushRun struct {
	mode    string // blocking or nonblocking
	res     runResult
	secs    float64
	eff     float64
	model   float64 // Markov model's efficiency (NaN if it cannot be evaluated)
	why     string  // why not, if NaN
	c1, c2  float64 // measured level-1 cost; blocking level-2 cost (c1 + flush)
	latency float64 // non-blocking flush latency ℓ2
	alpha   float64 // non-blocking overhead factor α measured (NaN if not)
	// modelAlpha is the α the model used: the measured one, or 0.
	modelAlpha float64
	restart    float64
}

// markov evaluates the multi-level Markov model at the run's schedule
// (interval t, K−1 level-1 checkpoints between flushes) with what the run
// measured: level-1 cost, blocking flush time or flush latency and α,
// restart time, and the injector's rate of node failures — all of level
// 1, since XOR across the nodes survives any one node (λ2 = 0: the flush
// protects against nothing this demo injects, and costs what it costs).
func (r *flushRun) markov(d flushDemo, mtti float64) {
	r.model, r.modelAlpha = math.NaN(), math.NaN()
	f := r.res.Flush
	r.c1 = f.Level1Cost()
	r.c2 = r.c1 + f.MeanSeconds()
	r.latency, r.alpha = stagedLatency(r.res.Staged), f.Alpha()
	if r.alpha < 0 {
		r.alpha = 0 // noise: a flush does not speed the application up
	}
	r.restart = predict(0, 0, mtti, r.res).restart
	if math.IsNaN(r.c1) || r.restart <= 0 {
		r.why = "the run measured no checkpoint or restart"
		return
	}
	sched := model.Schedule{Interval: d.interval, Counts: []int{d.every - 1}}
	var res model.MultilevelResult
	var err error
	switch r.mode {
	case "blocking":
		if math.IsNaN(r.c2) {
			r.why = "no blocking flush completed"
			return
		}
		lv := model.Levels{Rates: []float64{1 / mtti, 0}, Cost: []float64{r.c1, r.c2}, Restart: []float64{r.restart, r.restart}}
		res, err = model.Blocking(lv, sched, model.BlockingOptions{})
	default:
		if math.IsNaN(r.latency) {
			r.why = "no non-blocking flush finished"
			return
		}
		// Without a measured α (no step of rank 0 ran while its node's
		// flush did) the model assumes none, and says so.
		alpha := r.alpha
		if math.IsNaN(alpha) {
			alpha = 0
		}
		r.modelAlpha = alpha
		lv := model.Levels{Rates: []float64{1 / mtti, 0}, Cost: []float64{r.c1, r.c1}, Restart: []float64{r.restart, r.restart}}
		res, err = model.NonBlocking{Levels: lv, FlushLatency: r.latency, Alpha: alpha}.Evaluate(sched)
	}
	if err != nil {
		r.why = err.Error()
		return
	}
	r.model = res.Efficiency
}

// runFlushVariants runs the job flushing in each mode (the same seed of
// failures for each) and reports them against the reference.
func runFlushVariants(ctx context.Context, modes []string, d flushDemo, mtti float64,
	spec func(name, interval string, inject bool) (runSpec, func() string, error),
	progress io.Writer, refSecs float64) ([]flushRun, error) {
	var out []flushRun
	for _, mode := range modes {
		fmt.Fprintf(progress, "%s flushing: %s to a shared tier of %s/s, checkpoint every %gs\n",
			mode, everyNth(d.every), fmtBytes(d.bandwidth), d.interval)
		s, logs, err := spec(mode, fmt.Sprintf("%gs", d.interval), true)
		if err != nil {
			return nil, err
		}
		s.flushEvery, s.sharedBandwidth = policy.FlushEvery{K: d.every}, d.bandwidth
		s.shared = s.cacheRoot + "-shared"
		if mode == "nonblocking" {
			s.stagingServers, s.flushBusy = 1, d.busy
		}
		start := time.Now()
		res, err := s.run(ctx)
		secs := time.Since(start).Seconds()
		if err != nil {
			fmt.Fprint(progress, logs())
			return nil, fmt.Errorf("the %s run: %w", mode, err)
		}
		r := flushRun{mode: mode, res: res, secs: secs, eff: refSecs / secs}
		r.markov(d, mtti)
		out = append(out, r)
	}
	return out, nil
}

// stagedLatency is the mean time the staging servers took per flush, from
// its announcement to its commit (NaN if none finished): ℓ2 as measured.
func stagedLatency(evs []launch.StageEvent) float64 {
	var sum float64
	n := 0
	for _, e := range evs {
		if e.State == "committed" || e.State == "durable" {
			sum += e.Seconds
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.3g GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.3g MB", b/1e6)
	}
	return fmt.Sprintf("%.3g kB", b/1e3)
}

func flushRunJSON(r flushRun, ref string) object {
	return object{
		{"result_matches_reference", r.res.Result != "" && r.res.Result == ref},
		{"failures_injected", r.res.Injected},
		{"restarts_from_cache", r.res.Restarts["cache"]},
		{"restarts_from_rebuild", r.res.Restarts["rebuild"]},
		{"restarts_from_shared", r.res.Restarts["shared"]},
		{"restarts_from_scratch", r.res.Restarts["none"]},
		{"failures", r.res.Account.Failures},
		{"scratch_no_checkpoint", r.res.Account.ScratchNoCheckpoint},
		{"scratch_unrecoverable", r.res.Account.ScratchUnrecoverable},
		{"relaunches_never_restored", r.res.Account.NeverRestored},
		{"run_seconds", num(r.secs)},
		{"efficiency", num(r.eff)},
		{"markov_efficiency", num(r.model)},
		{"markov_error", num((r.eff - r.model) / r.model)},
		{"level1_cost_seconds", num(r.c1)},
		{"level2_cost_seconds", num(r.c2)},
		{"flush_latency_seconds", num(r.latency)},
		{"alpha", num(r.alpha)},
		{"markov_alpha", num(r.modelAlpha)},
		{"restart_seconds", num(r.restart)},
		{"flush", flushJSON(r.res)},
	}
}

func printFlushRuns(w io.Writer, runs []flushRun, d flushDemo, mtti, refSecs float64, ref string) error {
	t := newTable(w)
	head := []string{""}
	for _, r := range runs {
		head = append(head, r.mode)
	}
	t.row(head...)
	row := func(name string, f func(r flushRun) string) {
		cells := []string{name}
		for _, r := range runs {
			cells = append(cells, f(r))
		}
		t.row(cells...)
	}
	row("failures injected", func(r flushRun) string { return fmt.Sprint(r.res.Injected) })
	row("restarts", func(r flushRun) string {
		return fmt.Sprintf("cache %d, rebuild %d, shared %d, scratch %d", r.res.Restarts["cache"], r.res.Restarts["rebuild"], r.res.Restarts["shared"], r.res.Restarts["none"])
	})
	row("failures", func(r flushRun) string { return r.res.Account.String() })
	row("time", func(r flushRun) string { return fmt.Sprintf("%.2f s (reference %.2f s)", r.secs, refSecs) })
	row("efficiency", func(r flushRun) string { return fmt.Sprintf("%.1f%%", 100*r.eff) })
	row("Markov model", func(r flushRun) string {
		if math.IsNaN(r.model) {
			return "n/a: " + r.why
		}
		return fmt.Sprintf("%.1f%% (measured − model %+.1f%%)", 100*r.model, 100*(r.eff-r.model)/r.model)
	})
	row("level-1 cost c1", func(r flushRun) string { return sec(r.c1) })
	row("flush", func(r flushRun) string {
		if r.mode == "blocking" {
			return fmt.Sprintf("c2 = %s (blocks)", sec(r.c2))
		}
		a := fmtAlpha(r.alpha)
		if math.IsNaN(r.alpha) {
			a += " (not measured; the model takes 0)"
		}
		return fmt.Sprintf("ℓ2 = %s in the background, α = %s", sec(r.latency), a)
	})
	row("flushes", func(r flushRun) string {
		f := r.res.Flush
		return fmt.Sprintf("%d due, %d started, %d skipped, %d failed", f.Due, f.Started, f.Skipped, f.Failed)
	})
	row("restart r", func(r flushRun) string { return sec(r.restart) })
	row("result", func(r flushRun) string {
		if r.res.Result != "" && r.res.Result == ref {
			return "identical to the reference"
		}
		return "DIFFERENT from the reference"
	})
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "model: λ1 = 1/%gs (node failures, all survivable by XOR), λ2 = 0; t = %gs, K = %d (the multi-level Markov model, blocking and non-blocking: docs/MODELS.md)\n", mtti, d.interval, d.every)
	return nil
}

var errFlushVariant = errors.New("a flushing run's result differs from the reference")

// demoFlush is `ckpt demo --flush MODE`: the reference run, then the job
// flushing in each mode under the same failures.
func demoFlush(c interface {
	Context() context.Context
	OutOrStdout() io.Writer
	ErrOrStderr() io.Writer
}, modes []string, d flushDemo, mtti float64, asJSON bool,
	spec func(name, interval string, inject bool) (runSpec, func() string, error)) error {
	progress := c.ErrOrStderr()
	fmt.Fprintln(progress, "reference: the job without failures or checkpoints")
	ref, logs, err := spec("reference", "none", false)
	if err != nil {
		return err
	}
	start := time.Now()
	refRes, err := ref.run(c.Context())
	refSecs := time.Since(start).Seconds()
	if err != nil {
		fmt.Fprint(progress, logs())
		return fmt.Errorf("the reference run: %w", err)
	}
	runs, err := runFlushVariants(c.Context(), modes, d, mtti, spec, progress, refSecs)
	if err != nil {
		return err
	}
	match := true
	for _, r := range runs {
		match = match && r.res.Result != "" && r.res.Result == refRes.Result
	}
	if asJSON {
		o := object{{"result_matches_reference", match}, {"reference_seconds", num(refSecs)},
			{"interval_seconds", d.interval}, {"flush_every", d.every}, {"shared_bandwidth_bytes_per_second", d.bandwidth},
			{"mtti_seconds", mtti}}
		for _, r := range runs {
			o = append(o, kv{r.mode, flushRunJSON(r, refRes.Result)})
		}
		if len(runs) == 2 {
			o = append(o, kv{"nonblocking_gain", num(runs[1].eff - runs[0].eff)})
		}
		if err := writeJSON(c.OutOrStdout(), o); err != nil {
			return err
		}
	} else if err := printFlushRuns(c.OutOrStdout(), runs, d, mtti, refSecs, refRes.Result); err != nil {
		return err
	}
	if !match {
		return fmt.Errorf("%w: %w", errNotRecoverable, errFlushVariant)
	}
	return nil
}
