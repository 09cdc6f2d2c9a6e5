package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

func newMultilevelCmd() *cobra.Command {
	c := leaf("multilevel --rates λ1,λ2[,…] --cost c1,c2[,…] --restart r1,r2[,…] [flags]", "Multi-level Markov model, blocking or non-blocking, with its optimiser", multilevelLong, multilevelExample)
	fs := c.Flags()
	f := &multilevelFlags{
		rates:        listFlag(fs, "rates", "rates", units.ParseRate, "failure rate of each level, per second (required)"),
		cost:         listFlag(fs, "cost", "durations", units.ParseDuration, "checkpoint cost of each level (required, > 0)"),
		restart:      listFlag(fs, "restart", "durations", units.ParseDuration, "restart cost of each level (required, ≥ 0)"),
		interval:     durationFlag(fs, "interval", "compute time between checkpoints (omit to optimise)"),
		nonblocking:  fs.Bool("nonblocking", false, "two-level non-blocking model: flush in the background"),
		flushLatency: durationFlag(fs, "flush-latency", "duration of the background copy ℓ_2 (with --nonblocking)"),
		alpha:        numberFlag(fs, "alpha", "slowdown of computation while a copy runs α (with --nonblocking, ≥ 0, default 0)"),
	}
	fs.Var(&f.counts, "counts", "level-i checkpoints between level-(i+1) checkpoints, one per level below the top")
	f.af = addAlphaFlags(fs)
	f.variant = fs.String("variant", "moody", "blocking model: moody, or l1-protected (level-1 protection of the first interval after a level-2 checkpoint; two levels)")
	f.asJSON = jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		scheme, err := f.scheme(c)
		if err != nil {
			return err
		}
		optimized := !f.interval.set
		var res model.MultilevelResult
		if optimized {
			res, err = scheme.Optimize()
		} else {
			res, err = scheme.Evaluate(model.Schedule{Interval: f.interval.v, Counts: append([]int{}, f.counts.v...)})
		}
		if err != nil {
			return modelErr(err)
		}
		return printMultilevel(c, scheme, res, optimized, *f.asJSON)
	}
	return c
}

const multilevelLong = `The multi-level checkpointing model of Moody et al. (blocking, any number of
levels) and its two-level non-blocking extension after Sato et al. (2012, §V),
exactly as docs/MODELS.md specifies.

Level 1 is the cheapest (node-local) and the last level the most resilient
(the shared tier). λ_i (--rates, per second) is the rate of failures of level
exactly i: recoverable from a level-i checkpoint but from no lower one; their
total must be > 0. c_i (--cost) is the time the application blocks to write a
level-i checkpoint, r_i (--restart) the time to recover from one.

A schedule is an interval (compute time between consecutive checkpoints) and,
for each level i below the top, the count v_i of level-i checkpoints between
two level-(i+1) checkpoints. Give --interval with --counts (or --interval
alone for one level) to evaluate that schedule, or neither to optimise both.

--nonblocking (two levels): every segment ends with a blocking level-1
checkpoint; the checkpoint closing a period is also copied to the shared tier
in the background, taking --flush-latency of wall-clock time and slowing
computation by (1 + --alpha) meanwhile. The second --cost entry is then the
part of a level-2 checkpoint the application waits for (the non-blocking
model of docs/MODELS.md takes it equal to c1). A copy that outlasts the period is infeasible (exit 2).

Efficiency is ideal time (failure-free, checkpoint-free compute) over
expected time; expected_seconds is the expected wall-clock time of one
top-level period.`

const multilevelExample = `  ckpt model multilevel --rates 2e-4,5e-5 --cost 30,400 --restart 40,500 --interval 600 --counts 4
  ckpt model multilevel --rates 1.757e-5,1.3774e-6 --cost 72.5,5104 --restart 72.5,5104
  ckpt model multilevel --rates 1.757e-5,1.3774e-6 --cost 72.5,72.5 --restart 72.5,5104 \
      --nonblocking --flush-latency 6380 --alpha 0.00184 --json`

// multilevelFlags are the flags of ckpt model multilevel.
type multilevelFlags struct {
	rates, cost, restart          *list
	interval, flushLatency, alpha *quantity
	counts                        intList
	nonblocking, asJSON           *bool
	variant                       *string
	af                            alphaFlags
}

// scheme checks the flags and returns the model they describe.
func (f *multilevelFlags) scheme(c *cobra.Command) (model.Scheme, error) {
	for _, l := range []struct {
		name string
		set  bool
	}{{"rates", f.rates.set}, {"cost", f.cost.set}, {"restart", f.restart.set}} {
		if !l.set {
			return model.Scheme{}, usagef("--%s is required (one entry per level)", l.name)
		}
	}
	s := model.Scheme{Levels: model.Levels{Rates: f.rates.v, Cost: f.cost.v, Restart: f.restart.v}, NonBlocking: *f.nonblocking}
	lv := s.Levels
	if err := lv.Validate(); err != nil {
		return s, modelErr(err)
	}
	if f.counts.set && !f.interval.set {
		return s, usagef("--counts: give --interval too, or neither to optimise both")
	}
	if f.interval.set && !f.counts.set && lv.L() > 1 {
		return s, usagef("--interval: with %d levels give --counts too (%d entries), or neither to optimise both", lv.L(), lv.L()-1)
	}
	switch *f.variant {
	case "moody":
	case "l1-protected":
		if s.NonBlocking {
			return s, usagef("--variant: applies to the blocking model only")
		}
		s.Options.L1ProtectedFirst = true
	default:
		return s, usagef("--variant: unknown variant %q (use moody or l1-protected)", *f.variant)
	}
	measured, fromFile, err := f.af.load()
	if err != nil {
		return s, err
	}
	if fromFile {
		if f.alpha.set {
			return s, usagef("--alpha and --alpha-from: give one")
		}
		f.alpha.v, f.alpha.set = measured.Alpha, true
		if !*f.asJSON {
			fmt.Fprintln(c.ErrOrStderr(), "ckpt model multilevel: "+measured.String())
		}
	}
	if !s.NonBlocking && (f.flushLatency.set || f.alpha.set) {
		name := "flush-latency"
		if f.alpha.set {
			name = "alpha"
		}
		return s, usagef("--%s: only used with --nonblocking", name)
	}
	if s.NonBlocking {
		if lv.L() != 2 {
			return s, usagef("--nonblocking: the non-blocking model has exactly two levels (got %d rates)", lv.L())
		}
		if !f.flushLatency.set {
			return s, usagef("--flush-latency is required with --nonblocking")
		}
		s.FlushLatency, s.Alpha = f.flushLatency.v, f.alpha.v
	}
	return s, nil
}

func printMultilevel(c *cobra.Command, scheme model.Scheme, res model.MultilevelResult, optimized, asJSON bool) error {
	lv, nonblocking := scheme.Levels, scheme.NonBlocking
	w := c.OutOrStdout()
	mode := "blocking"
	if nonblocking {
		mode = "nonblocking"
	}
	if asJSON {
		o := object{
			{"efficiency", num(res.Efficiency)},
			{"expected_seconds", num(res.PeriodSeconds)},
			{"interval_seconds", num(res.Interval)},
			{"counts", res.Counts},
			{"segments", res.Segments()},
			{"optimized", optimized},
			{"mode", mode},
		}
		if nonblocking {
			o = append(o, kv{"incomplete_segments", res.Incomplete})
		}
		return writeJSON(w, o)
	}
	t := newTable(w)
	what := "evaluated"
	if optimized {
		what = "optimised over interval and counts"
	}
	t.row("model", fmt.Sprintf("%d levels, %s (%s)", lv.L(), mode, what))
	t.row("efficiency", fmt.Sprintf("%.6g (%s)", res.Efficiency, pct(res.Efficiency)))
	t.row("interval", fmt.Sprintf("%s (%s)", units.FormatDuration(res.Interval), sec(res.Interval)))
	if len(res.Counts) > 0 {
		var parts []string
		for i, v := range res.Counts {
			parts = append(parts, fmt.Sprintf("%d level-%d per level-%d", v, i+1, i+2))
		}
		t.row("counts", strings.Join(parts, ", "))
	}
	t.row("period", fmt.Sprintf("%s intervals, expected %s (%s)", strconv.Itoa(res.Segments()), units.FormatDuration(res.PeriodSeconds), sec(res.PeriodSeconds)))
	if nonblocking {
		t.row("background copy", fmt.Sprintf("spans %d of the %d segments (α = %g)", res.Incomplete, res.Segments(), scheme.Alpha))
	}
	return t.flush()
}
