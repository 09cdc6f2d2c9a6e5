package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/model"
)

func newDemoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "demo [--json]",
		Short: "Himeno on 8 ranks over 4 nodes with node failures injected, against a failure-free run",
		Long: `Runs the distributed Himeno benchmark (ckpt example himeno) as a job of 8
ranks over 4 simulated nodes, protected by XOR parity across the 4 nodes,
checkpointing at Daly's interval from the cost it measures and the failures
it sees, while whole nodes fail at random (seeded) together with their
caches. Each failure stops the job; ckpt relaunches it, rebuilds the lost
node's checkpoint files from the other nodes' parity, and goes on. Then it
runs the same job without failures and without checkpoints, and compares:
the results must be identical, bit for bit; the efficiency is the
failure-free run's time over the time with failures.

It needs nothing but this binary: the nodes are directories under the temp
directory, removed at the end.`,
		Args: cobra.NoArgs,
	}
	iters := c.Flags().Int("iterations", 1500, "Himeno iterations")
	size := c.Flags().String("size", "s", "Himeno grid: xs, s, m, l, xl or IxJxK")
	mtti := durationFlag(c.Flags(), "mtti", "mean time between injected node failures, in job time (default 2.5s)")
	seed := c.Flags().Uint64("seed", 3, "seed of the injected failures")
	flushMode := c.Flags().String("flush", "none", "also flush to a shared tier: none, blocking, nonblocking (a staging server pulls) or compare (both, same failures)")
	flushEvery := c.Flags().Int("flush-every", 2, "with --flush: flush every K-th checkpoint")
	flushBW := bandwidthFlag(c.Flags(), "shared-bandwidth", "with --flush: the shared tier's bandwidth (default 4MB/s)")
	flushInterval := durationFlag(c.Flags(), "flush-interval", "with --flush: computation between checkpoints (default 1s)")
	flushBusy := c.Flags().String("flush-busy", "skip", "with --flush nonblocking: a flush due while the previous runs is skipped, or waits")
	asJSON := jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if *iters < 1 {
			return usagef("--iterations %d: need at least 1", *iters)
		}
		if _, err := himeno.ParseSize(*size); err != nil {
			return usagef("--size: %v", err)
		}
		m := 2.5
		if mtti.set {
			if mtti.v < 0.5 {
				return usagef("--mtti %gs: need at least 0.5s (a relaunch takes a fraction of a second)", mtti.v)
			}
			m = mtti.v
		}
		var modes []string
		switch *flushMode {
		case "none":
			for _, name := range []string{"flush-every", "shared-bandwidth", "flush-interval", "flush-busy"} {
				if c.Flags().Changed(name) {
					return usagef("--%s applies to the flushing runs: add --flush blocking, nonblocking or compare", name)
				}
			}
		case "blocking", "nonblocking":
			modes = []string{*flushMode}
		case "compare":
			modes = []string{"blocking", "nonblocking"}
		default:
			return usagef("--flush %q: want none, blocking, nonblocking or compare", *flushMode)
		}
		fd := flushDemo{interval: 1, every: *flushEvery, bandwidth: 4e6, busy: *flushBusy}
		if flushBW.set {
			if flushBW.v <= 0 {
				return usagef("--shared-bandwidth %g: want a positive bandwidth", flushBW.v)
			}
			fd.bandwidth = flushBW.v
		}
		if flushInterval.set {
			if flushInterval.v < 0.05 {
				return usagef("--flush-interval %gs: need at least 0.05s", flushInterval.v)
			}
			fd.interval = flushInterval.v
		}
		if fd.every < 1 {
			return usagef("--flush-every %d: need ≥ 1", fd.every)
		}
		if fd.busy != "skip" && fd.busy != "wait" {
			return usagef("--flush-busy %q: want skip or wait", fd.busy)
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		root, err := os.MkdirTemp("", "ckpt-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(root)
		progress := c.ErrOrStderr()
		args := []string{"example", "himeno", "--size", *size, "--iterations", fmt.Sprint(*iters)}
		spec := func(name, interval string, inject bool) (runSpec, *bytes.Buffer, error) {
			s, err := demoSpec(exe, args, interval, m, *seed, inject)
			s.cacheRoot = filepath.Join(root, name)
			var out bytes.Buffer
			s.output, s.progress = &out, progress
			return s, &out, err
		}

		if modes != nil {
			return demoFlush(c, modes, fd, m, *asJSON, func(name, interval string, inject bool) (runSpec, func() string, error) {
				s, out, err := spec(name, interval, inject)
				return s, out.String, err
			})
		}
		fmt.Fprintf(progress, "ckpt demo: Himeno (size %s, %d iterations) on 8 ranks over 4 nodes, XOR across the 4,\n", *size, *iters)
		fmt.Fprintf(progress, "whole nodes failing at random (mean %gs apart, seed %d); checkpoint interval: Daly's, from the\n", m, *seed)
		fmt.Fprintf(progress, "measured checkpoint cost and the injector's MTTI\n")
		run, out, err := spec("run", fmt.Sprintf("auto:%gs", m), true)
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := run.run(c.Context())
		runSecs := time.Since(start).Seconds()
		if err != nil {
			io.Copy(progress, out)
			return fmt.Errorf("the run with failures: %w", err)
		}
		fmt.Fprintln(progress, "reference: the same job, no failures, no checkpoints")
		ref, refOut, err := spec("reference", "none", false)
		if err != nil {
			return err
		}
		start = time.Now()
		refRes, err := ref.run(c.Context())
		refSecs := time.Since(start).Seconds()
		if err != nil {
			io.Copy(progress, refOut)
			return fmt.Errorf("the reference run: %w", err)
		}
		match := res.Result != "" && res.Result == refRes.Result
		eff := refSecs / runSecs
		pred := predict(refSecs, runSecs, m, res)
		if *asJSON {
			if err := writeJSON(c.OutOrStdout(), object{
				{"result_matches_reference", match},
				{"failures_injected", res.Injected},
				{"restarts_from_cache", res.Restarts["cache"]},
				{"restarts_from_rebuild", res.Restarts["rebuild"]},
				{"restarts_from_shared", res.Restarts["shared"]},
				{"restarts_from_scratch", res.Restarts["none"]},
				{"efficiency", num(eff)},
				{"attempts", len(res.Attempts)},
				{"run_seconds", num(runSecs)},
				{"reference_seconds", num(refSecs)},
				{"checkpoint_seconds", num(res.Policy.Cost.Seconds())},
				{"restart_seconds", num(pred.restart)},
				{"mtti_seconds", m},
				{"interval_seconds", num(pred.interval)},
				{"model_efficiency", num(pred.efficiency)},
				{"model_error", num(pred.err)},
				{"result", res.Result},
				{"reference_result", refRes.Result},
			}); err != nil {
				return err
			}
		} else {
			w := c.OutOrStdout()
			t := newTable(w)
			t.row("failures injected", fmt.Sprint(res.Injected))
			t.row("restarts", fmt.Sprintf("from cache %d, rebuilt from parity %d, from the shared tier %d, from scratch %d",
				res.Restarts["cache"], res.Restarts["rebuild"], res.Restarts["shared"], res.Restarts["none"]))
			t.row("failures", res.Account.String())
			t.row("checkpoint cost", sec(res.Policy.Cost.Seconds()), "(measured)")
			t.row("time", fmt.Sprintf("%.2f s with failures, %.2f s without", runSecs, refSecs))
			t.row("efficiency", fmt.Sprintf("%.1f%%", 100*eff))
			t.row("model", fmt.Sprintf("%.1f%% (Daly's run time, Oldfield et al. 2007, eq. 1: δ = %s measured, R = %s measured, M = %gs, τ = %s); measured − model = %+.1f%% of the model",
				100*pred.efficiency, sec(res.Policy.Cost.Seconds()), sec(pred.restart), m, sec(pred.interval), 100*pred.err))
			t.row("result", res.Result)
			t.row("reference", refRes.Result)
			verdict := "identical to the failure-free run"
			if !match {
				verdict = "DIFFERENT from the failure-free run"
			}
			t.row("verdict", verdict)
			if err := t.flush(); err != nil {
				return err
			}
		}
		if !match {
			return fmt.Errorf("%w: the result with failures differs from the reference", errNotRecoverable)
		}
		return nil
	}
	return c
}

// demoSpec is one of the demo's runs: 8 ranks of himeno over 4 nodes with
// XOR across them.
func demoSpec(exe string, args []string, interval string, mtti float64, seed uint64, injectFailures bool) (runSpec, error) {
	p, err := policy.Parse(interval)
	if err != nil {
		return runSpec{}, err
	}
	s := runSpec{ranks: 8, nodes: 4, program: exe, args: args, redundancy: "xor:4", interval: p,
		retries: 20, heartbeat: 10 * time.Second}
	if injectFailures {
		cfg, err := inject.ParseFlags(fmt.Sprintf("%gs", mtti), "exp", "node", seed)
		if err != nil {
			return s, err
		}
		s.inject = &cfg
	}
	return s, nil
}

// prediction is what Daly's model expects of a run with failures, from
// what the run measured.
type prediction struct {
	restart, interval, efficiency, err float64
}

// predict evaluates Daly's run time (000 eq. 1) at Daly's interval for the
// measured checkpoint cost, the measured mean restart (from a failure to
// the restored state) and the injector's MTTI; efficiency does not depend
// on the work. With the failure-free run's time (work > 0) it also gives
// the measured efficiency's relative error against the model.
func predict(work, measured, mtti float64, res runResult) prediction {
	p := prediction{interval: math.NaN(), efficiency: math.NaN(), err: math.NaN()}
	var sum float64
	n := 0
	for i, a := range res.Attempts[min(1, len(res.Attempts)):] {
		if a.RestoredAt > 0 {
			sum += (a.RestoredAt - res.Attempts[i].End).Seconds()
			n++
		}
	}
	switch {
	case n > 0:
		p.restart = sum / float64(n)
	case len(res.Attempts) > 0:
		// No restart was seen: the first launch's start-up is the best
		// measure of what one costs.
		p.restart = res.Attempts[0].RestoredAt.Seconds()
	}
	cost := res.Policy.Cost.Seconds()
	if cost <= 0 || mtti <= 0 {
		return p
	}
	p.interval = model.Daly(cost, mtti)
	_, p.efficiency = model.DalyRuntime(model.RuntimeInput{Work: 1, Interval: p.interval, Cost: cost, MTTI: mtti, Restart: p.restart})
	if work > 0 && measured > 0 {
		p.err = (work/measured - p.efficiency) / p.efficiency
	}
	return p
}
