package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

func newRuntimeCmd() *cobra.Command {
	c := leaf("runtime --work D --interval D --cost D --mtti D [--restart D]", "Expected run time and efficiency under Daly's model (Oldfield et al. 2007, eq. 1)", runtimeLong, `  ckpt model runtime --work 500d --interval 115m --cost 5m --mtti 24h --restart 5m`)
	fs := c.Flags()
	work := durationFlag(fs, "work", "failure-free compute time of the job T_s (required, > 0)")
	interval := durationFlag(fs, "interval", "compute time between checkpoints τ (required, > 0)")
	cost := durationFlag(fs, "cost", "checkpoint cost δ (required, > 0)")
	mtti := durationFlag(fs, "mtti", "mean time to interrupt M (required, > 0)")
	restart := durationFlag(fs, "restart", "restart cost R (≥ 0, default 0)")
	asJSON := jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := require(req{"work", work}, req{"interval", interval}, req{"cost", cost}, req{"mtti", mtti}); err != nil {
			return err
		}
		in := model.RuntimeInput{Work: work.v, Interval: interval.v, Cost: cost.v, MTTI: mtti.v, Restart: restart.v}
		if err := in.Validate(); err != nil {
			return modelErr(err)
		}
		expected, eff := model.DalyRuntime(in)
		w := c.OutOrStdout()
		if *asJSON {
			return writeJSON(w, object{{"expected_seconds", num(expected)}, {"efficiency", num(eff)}})
		}
		t := newTable(w)
		t.row("expected run time", fmt.Sprintf("%s (%s)", units.FormatDuration(expected), sec(expected)))
		t.row("efficiency", fmt.Sprintf("%.6g (%s of the time is useful work)", eff, pct(eff)))
		t.row("daly optimum", fmt.Sprintf("interval %s for this cost and MTTI (Oldfield et al. 2007, eq. 2)", units.FormatDuration(model.Daly(cost.v, mtti.v))))
		return t.flush()
	}
	return c
}

const runtimeLong = `Evaluates Oldfield et al. 2007, eq. 1, T = M e^{R/M} (e^{(τ+δ)/M} − 1) T_s/τ, for a job of
T_s = --work seconds of computation that checkpoints every τ = --interval at a
cost δ = --cost, under failures with mean time to interrupt M = --mtti and a
restart cost R = --restart. Efficiency is T_s/T. e^x − 1 is evaluated with
expm1, so very large MTTIs keep their precision.`
