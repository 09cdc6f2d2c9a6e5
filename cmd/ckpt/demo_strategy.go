package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// demoStrategyFlags are ckpt demo's flags of --strategy: the job is then
// Fialho et al. 2011's synthetic application (examples/torus), whose
// every message goes through Job.Send and Job.Recv, and not Himeno,
// whose halo exchange does not (it runs over the job's collectives).
type demoStrategyFlags struct {
	strategy *string
	steps, n *int
	changed  func(string) bool
}

func addDemoStrategyFlags(c *cobra.Command) *demoStrategyFlags {
	fs := c.Flags()
	return &demoStrategyFlags{
		strategy: fs.String("strategy", "", "instead: Fialho et al. 2011's synthetic application (ckpt example torus: 6 ranks on a 3×2 torus, one a node) with rank failures (a process killed), under the "+
			"coordinated strategy, the uncoordinated one (each rank checkpoints alone, logs what it receives, recovers alone), or compare (both, the same seeded failures), "+
			"beside Daly's model and Fialho et al.'s eq. 10 (--mtti default: the failure-free reference's time, measured first, at least 0.5s, so that the failures scale with the machine's speed). Himeno is not run so: its halo exchange goes through the collectives, not Job.Send/Recv"),
		steps:   fs.Int("steps", demoTorusSteps, "with --strategy: the torus's compute-and-exchange steps"),
		n:       fs.Int("n", demoTorusN, "with --strategy: the order of each step's matrix product"),
		changed: fs.Changed,
	}
}

// The demo's torus: 3×2 ranks, one a node, and its default length.
const (
	demoTorusW, demoTorusH = 3, 2
	demoTorusSteps         = 1500
	demoTorusN             = 64
	// demoTorusMinMTTI is the least MTTI strategyMTTI sets: --mtti's
	// own least (a relaunch takes a fraction of a second).
	demoTorusMinMTTI = 0.5
)

// strategyMTTI is the --strategy demo's MTTI without --mtti: the first
// failure-free reference's wall-clock seconds, at least demoTorusMinMTTI.
// A fixed MTTI depends on the machine's speed: on a loaded machine the
// ranks' start alone took 6 s and a 1 s MTTI killed the coordinated job
// faster than it could relaunch (retries spent); on a fast one, the runs
// could end before their first failure. Scaled by the reference, the
// failures come about once a failure-free job's time (a coordinated
// relaunch, which starts the ranks again, costs up to that much at the
// demo's small sizes, so a shorter MTTI would kill most relaunches),
// and a seed's schedule, in units of the MTTI, falls at the same points
// of the job on any machine.
func strategyMTTI(referenceSecs float64) float64 {
	if !(referenceSecs > demoTorusMinMTTI) {
		return demoTorusMinMTTI
	}
	return referenceSecs
}

// mttiNote says where the MTTI came from in the progress.
func mttiNote(set bool) string {
	if set {
		return ""
	}
	return ": the failure-free reference's time, as no --mtti was given"
}

// on reports that --strategy was given.
func (f *demoStrategyFlags) on() bool { return f.changed("strategy") }

// check validates --strategy and refuses the flags that configure the
// other demos; it returns the strategies to run, in order.
func (f *demoStrategyFlags) check() ([]string, error) {
	if !f.on() {
		for _, name := range []string{"steps", "n"} {
			if f.changed(name) {
				return nil, usagef("--%s applies to --strategy's torus: add --strategy coordinated, uncoordinated or compare", name)
			}
		}
		return nil, nil
	}
	var which []string
	switch *f.strategy {
	case jobenv.StrategyCoordinated, jobenv.StrategyUncoordinated:
		which = []string{*f.strategy}
	case "compare":
		which = []string{jobenv.StrategyCoordinated, jobenv.StrategyUncoordinated}
	default:
		return nil, usagef("--strategy %q: want %s, %s or compare", *f.strategy, jobenv.StrategyCoordinated, jobenv.StrategyUncoordinated)
	}
	for _, name := range []string{"transparent", "flush", "flush-every", "shared-bandwidth", "flush-interval", "flush-busy",
		"netns", "size", "iterations", "launcher", "launcher-args", "spares", "references"} {
		if f.changed(name) {
			return nil, usagef("--%s: not with --strategy (its demo runs the torus with ckpt run's own launcher, no flushing)", name)
		}
	}
	if *f.steps < 1 {
		return nil, usagef("--steps %d: need at least 1", *f.steps)
	}
	if *f.n < 0 || *f.n > 2048 {
		return nil, usagef("--n %d: want 0 to 2048", *f.n)
	}
	return which, nil
}

// strategyRun is one run with failures under a strategy, and its models.
type strategyRun struct {
	strategy string
	res      runResult
	secs     float64
	interval policy.Policy // the ranks' checkpoint policy
	daly     demo.Daly     // coordinated: Daly's eq. 1 at the measured cost
	fialho   demo.Fialho   // uncoordinated: Fialho et al. eq. 10
}

// efficiency is the run's measured efficiency against work.
func (r strategyRun) efficiency(work float64) float64 { return demo.Efficiency(work, r.secs) }

// model is the run's model efficiency: Daly's eq. 1 (Oldfield et al.
// 2007) for the coordinated run, as the plain demo; Fialho et al. 2011
// eq. 10 for the uncoordinated one.
func (r strategyRun) model() float64 {
	if r.strategy == jobenv.StrategyUncoordinated {
		return r.fialho.Efficiency
	}
	return r.daly.Efficiency
}

// demoStrategy is `ckpt demo --strategy`: the failure-free reference, the
// run under each strategy with the same seeded node failures, the
// reference again; the results compared bit for bit, the efficiencies
// beside their models. Without --mtti, the MTTI is the first reference's
// time (strategyMTTI), so that the failures come at the same rate
// relative to the job whatever the machine's speed.
func demoStrategy(c *cobra.Command, f *demoStrategyFlags, which []string, mttiSet bool, m float64, seed uint64, asJSON bool) error {
	exe, root, err := demoDirs()
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	args := []string{"example", "torus", "--width", fmt.Sprint(demoTorusW), "--height", fmt.Sprint(demoTorusH),
		"--steps", fmt.Sprint(*f.steps), "--n", fmt.Sprint(*f.n)}
	progress := c.ErrOrStderr()
	fmt.Fprintf(progress, "ckpt demo --strategy %s: Fialho et al. 2011's synthetic application (%d×%d torus, %d steps, %d×%d products) on %d ranks, one a node,\n",
		*f.strategy, demoTorusW, demoTorusH, *f.steps, *f.n, *f.n, demoTorusW*demoTorusH)
	spec := func(strategy string) func(name, interval string, inject bool) (runSpec, func() string, error) {
		return func(name, interval string, inject bool) (runSpec, func() string, error) {
			s, err := strategySpec(exe, args, strategy == jobenv.StrategyUncoordinated, interval, m, seed, inject)
			s.cacheRoot = filepath.Join(root, name)
			var out bytes.Buffer
			s.output, s.progress = &out, progress
			return s, out.String, err
		}
	}
	jobs := demoJobs{spec: spec(jobenv.StrategyCoordinated), run: timedRun}
	// The references before and after the runs (demoJobs.references,
	// unrolled: the MTTI is known only after the first).
	before, beforeSecs, err := jobs.reference(c.Context(), progress, "before")
	if err != nil {
		return err
	}
	if !mttiSet {
		m = strategyMTTI(beforeSecs)
	}
	fmt.Fprintf(progress, "ranks' processes killed at random (mean %gs apart%s, seed %d), the same failures for each strategy\n", m, mttiNote(mttiSet), seed)
	var runs []strategyRun
	for _, strategy := range which {
		fmt.Fprintf(progress, "the run with failures, %s\n", strategy)
		s, out, err := spec(strategy)(strategy, fmt.Sprintf("auto:%gs", m), true)
		if err != nil {
			return err
		}
		res, secs, err := jobs.run(c.Context(), s)
		if err != nil {
			io.WriteString(progress, out())
			return fmt.Errorf("the %s run with failures: %w", strategy, err)
		}
		runs = append(runs, strategyRun{strategy: strategy, res: res, secs: secs, interval: s.interval})
	}
	after, afterSecs, err := jobs.reference(c.Context(), progress, "after")
	if err != nil {
		return err
	}
	ref, refResult := demo.Reference{Before: beforeSecs, After: afterSecs}, before.Result
	refMatch := refResult != "" && after.Result == refResult
	work := ref.Work()
	match := refMatch
	for i := range runs {
		r := &runs[i]
		match = match && r.res.Result == refResult
		if r.strategy == jobenv.StrategyUncoordinated {
			r.fialho = demo.CompareFialho(r.res.MsgLog, demoTorusW*demoTorusH, r.res.RanksRecoveredAlone, r.res.Phi, r.secs, m, r.interval)
		} else {
			r.daly = demo.CompareDaly(work, r.secs, m, r.res.Policy.Cost.Seconds(), r.res.Attempts)
		}
	}
	if err := printStrategies(c.OutOrStdout(), runs, work, ref, m, match, refResult, asJSON); err != nil {
		return err
	}
	if !match {
		return fmt.Errorf("%w: a result with failures differs from the reference", errNotRecoverable)
	}
	return nil
}

// strategySpec is one of the --strategy demo's runs: the torus's 6 ranks
// on 6 nodes, XOR across each 3, rank failures (a process killed) from
// the demo's seeded injector. Ranks, not nodes: a lost node takes the
// message logs it protects for its neighbours with it, and the runtime
// does not re-form the protectors yet (issue 16 item 2), so a node
// failure stops the uncoordinated job; the same kind for both
// strategies keeps the schedule the same.
func strategySpec(exe string, args []string, uncoordinated bool, interval string, mtti float64, seed uint64, injectFailures bool) (runSpec, error) {
	n := demoTorusW * demoTorusH
	return demoShape{ranks: n, nodes: n, redundancy: "xor:3", retries: 100, kind: "rank", uncoordinated: uncoordinated}.
		spec(exe, args, interval, mtti, seed, injectFailures)
}

// uncoordinatedOf is the uncoordinated run among runs, if any.
func uncoordinatedOf(runs []strategyRun) (strategyRun, bool) {
	for _, r := range runs {
		if r.strategy == jobenv.StrategyUncoordinated {
			return r, true
		}
	}
	return strategyRun{}, false
}

// printStrategies prints the runs: under compare with --json exactly the
// keys of issue 16's contract; for one strategy, its figures and the
// model's inputs.
func printStrategies(w io.Writer, runs []strategyRun, work float64, ref demo.Reference, m float64, match bool, refResult string, asJSON bool) error {
	injected := 0
	for _, r := range runs {
		injected += r.res.Injected
	}
	u, hasU := uncoordinatedOf(runs)
	if asJSON {
		if len(runs) == 2 {
			return writeJSON(w, object{
				{"coordinated_efficiency", num(runs[0].efficiency(work))},
				{"uncoordinated_efficiency", num(u.efficiency(work))},
				{"coordinated_model_efficiency", num(runs[0].model())},
				{"uncoordinated_model_efficiency", num(u.model())},
				{"result_matches_reference", match},
				{"failures_injected", injected},
				{"ranks_recovered_alone", u.res.RanksRecoveredAlone},
				{"whole_job_restarts", u.res.WholeJobRestarts},
				{"phi", phiNum(u.res.Phi)},
				{"log_protect_seconds", num(u.res.MsgLog.Protect.Seconds())},
				{"log_replay_seconds", num(u.res.MsgLog.Replay.Seconds())},
			})
		}
		r := runs[0]
		out := map[string]any{
			"strategy": r.strategy, "efficiency": num(r.efficiency(work)), "model_efficiency": num(r.model()),
			"result_matches_reference": match, "failures_injected": injected,
			"ranks_recovered_alone": r.res.RanksRecoveredAlone, "whole_job_restarts": r.res.WholeJobRestarts,
			"run_seconds": num(r.secs), "reference_seconds": num(work), "mtti_seconds": m,
			"result": r.res.Result, "reference_result": refResult,
		}
		if hasU {
			f := u.fialho
			for k, v := range map[string]float64{"phi": f.Phi, "log_protect_seconds": u.res.MsgLog.Protect.Seconds(),
				"log_replay_seconds": u.res.MsgLog.Replay.Seconds(), "checkpoint_seconds": f.Cost, "load_seconds": f.Load,
				"log_protect_window_seconds": f.LogProtect, "log_replay_recovery_seconds": f.LogReplay, "interval_seconds": f.Interval} {
				out[k] = num(v)
			}
			out["phi"] = phiNum(f.Phi)
		} else {
			out["checkpoint_seconds"], out["restart_seconds"], out["interval_seconds"] = num(r.res.Policy.Cost.Seconds()), num(r.daly.Restart), num(r.daly.Interval)
		}
		return writeJSON(w, out)
	}
	t := newTable(w)
	t.row("reference", fmt.Sprintf("%.2f s without failures or checkpoints", work), referenceNote(ref))
	for _, r := range runs {
		eff := r.efficiency(work)
		t.row(r.strategy, fmt.Sprintf("%.2f s with %d failures; efficiency %.1f%%", r.secs, r.res.Injected, 100*eff))
		if r.strategy == jobenv.StrategyUncoordinated {
			f := r.fialho
			t.row("", fmt.Sprintf("%d ranks recovered alone, %d whole-job restarts; logging %s, log replay %s (summed over the ranks)",
				r.res.RanksRecoveredAlone, r.res.WholeJobRestarts, sec(r.res.MsgLog.Protect.Seconds()), sec(r.res.MsgLog.Replay.Seconds())))
			t.row("", fmt.Sprintf("model %.1f%% (Fialho et al. 2011, eq. 10: t_c = %s, t_l = %s, t_d = 0, Δ_lp = %s a window, Δ_lr = %s a recovery, φ = %.4g measured, α = %gs, σ = %s by eq. 11 at φ = 1); measured − model = %+.1f%% of the model",
				100*f.Efficiency, sec(f.Cost), sec(f.Load), sec(f.LogProtect), sec(f.LogReplay), f.Phi, m, sec(f.Interval), 100*demo.RelErr(eff, f.Efficiency)))
		} else {
			d := r.daly
			t.row("", fmt.Sprintf("%d attempts (every failure relaunches the whole job)", len(r.res.Attempts)))
			t.row("", fmt.Sprintf("model %.1f%% (Daly's run time, Oldfield et al. 2007, eq. 1: δ = %s measured, R = %s measured, M = %gs, τ = %s); measured − model = %+.1f%% of the model",
				100*d.Efficiency, sec(r.res.Policy.Cost.Seconds()), sec(d.Restart), m, sec(d.Interval), 100*demo.RelErr(eff, d.Efficiency)))
		}
		t.row("", "result "+r.res.Result)
	}
	t.row("reference result", refResult)
	verdict := "identical to the failure-free run"
	if !match {
		verdict = "DIFFERENT from the failure-free run"
	}
	t.row("verdict", verdict)
	return t.flush()
}

// demoDirs is the demo's program (this binary, whose examples its jobs
// run) and a new temporary directory for the jobs' nodes, which the
// caller removes.
func demoDirs() (exe, root string, err error) {
	if exe, err = os.Executable(); err != nil {
		return "", "", err
	}
	root, err = os.MkdirTemp("", "ckpt-demo-")
	return exe, root, err
}
