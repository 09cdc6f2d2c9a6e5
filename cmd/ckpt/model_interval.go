package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

func newIntervalCmd() *cobra.Command {
	c := leaf("interval --method METHOD --cost D --mtti D [flags]", "Optimal checkpoint interval by one of six methods", intervalLong, intervalExample)
	fs := c.Flags()
	f := &intervalFlags{}
	f.method = fs.String("method", "", "young, daly, daly1, gropp, fialho or fialho-parallel (required)")
	f.cost = durationFlag(fs, "cost", "checkpoint cost δ = t_c (required, > 0)")
	f.mtti = durationFlag(fs, "mtti", "mean time to interrupt M = α of the whole job (required, > 0)")
	f.restart = durationFlag(fs, "restart", "time to load a checkpoint t_l (fialho methods, ≥ 0)")
	f.detect = durationFlag(fs, "detect", "failure detection latency t_d (fialho methods, ≥ 0)")
	f.phi = numberFlag(fs, "phi", "inter-process dependency factor φ in (0, 1] (fialho-parallel; see 'ckpt model phi')")
	f.logProtect = durationFlag(fs, "log-protect", "message-logging time per MTTI window Δ_lp (fialho-parallel, ≥ 0)")
	f.logReplay = durationFlag(fs, "log-replay", "log replay time after a failure Δ_lr (fialho-parallel, ≥ 0)")
	f.at = durationFlag(fs, "interval", "evaluate the Fialho overhead at this interval instead of the optimum")
	f.asJSON = jsonFlag(c)

	return runs(c, f)
}

// intervalFlags are the flags of the command newIntervalCmd builds.
type intervalFlags struct {
	method                                                      *string
	cost, mtti, restart, detect, phi, logProtect, logReplay, at *quantity
	asJSON                                                      *bool
}

func (f *intervalFlags) run(c *cobra.Command) error {
	if *f.method == "" {
		return usagef("--method is required (young, daly, daly1, gropp, fialho or fialho-parallel)")
	}
	m, err := model.ParseMethod(*f.method)
	if err != nil {
		return usagef("--method: %v", err)
	}
	if err := require(req{"cost", f.cost}, req{"mtti", f.mtti}); err != nil {
		return err
	}
	optional := map[string]*quantity{"restart": f.restart, "detect": f.detect, "phi": f.phi, "log-protect": f.logProtect, "log-replay": f.logReplay, "interval": f.at}
	ignored := []string{}
	for _, name := range []string{"restart", "detect", "phi", "log-protect", "log-replay", "interval"} {
		if optional[name].set && !m.Uses(name) {
			ignored = append(ignored, name)
		}
	}
	if f.phi.set {
		if err := model.ValidatePhi(f.phi.v); err != nil {
			return modelErr(err)
		}
	}
	if m == model.MethodFialhoParallel && !f.phi.set {
		return usagef("--phi is required by --method fialho-parallel (compute it with 'ckpt model phi')")
	}
	if f.at.set && !(f.at.v > 0) {
		return usagef("--interval: must be > 0 (got %g)", f.at.v)
	}
	in := model.IntervalInput{Cost: f.cost.v, MTTI: f.mtti.v, Restart: f.restart.v, Detect: f.detect.v,
		Phi: f.phi.v, LogProtect: f.logProtect.v, LogReplay: f.logReplay.v}
	res, err := model.OptimalInterval(m, in, f.at.v)
	if err != nil {
		return modelErr(err)
	}
	fialho := m == model.MethodFialho || m == model.MethodFialhoParallel
	w := c.OutOrStdout()
	if *f.asJSON {
		o := object{{"method", string(m)}, {"interval_seconds", num(res.Interval)}, {"ignored", ignored}}
		if fialho {
			o = append(o, kv{"overhead_seconds", num(res.Overhead)}, kv{"overhead_interval_seconds", num(res.OverheadAt)},
				kv{"overhead_fraction", num(res.Overhead / f.mtti.v)})
		}
		return writeJSON(w, o)
	}
	t := newTable(w)
	t.row("method", fmt.Sprintf("%s (%s)", m, m.Source()))
	t.row("interval", fmt.Sprintf("%s (%s)", units.FormatDuration(res.Interval), sec(res.Interval)))
	if fialho {
		where := "at the optimum"
		if f.at.set {
			where = "at --interval " + units.FormatDuration(res.OverheadAt)
		}
		t.row("overhead", fmt.Sprintf("%s per MTTI window of %s, %s (%s of the time)",
			units.FormatDuration(res.Overhead), units.FormatDuration(f.mtti.v), where, pct(res.Overhead/f.mtti.v)))
	}
	if len(ignored) > 0 {
		t.row("ignored", "--"+strings.Join(ignored, ", --")+" (not used by this method)")
	}
	return t.flush()
}

const intervalLong = `Computes the optimal interval (compute time between checkpoints) of one method:

  young            Young 1974, √(2δM)
  daly             Daly's higher-order estimate (Oldfield et al. 2007, eq. 2;
                   τ = M when δ ≥ 2M)
  daly1            Daly's first-order estimate, √(2δM) − δ; it holds for δ < 2M
                   only (beyond, it is ≤ 0: exit 2, use daly)
  gropp            Gropp and Lusk, √(2δM) (same optimum as Young)
  fialho           Fialho et al. 2011, serial or coordinated, eq. 6; also the
                   overhead of eq. 5 per MTTI window
  fialho-parallel  Fialho et al. 2011, uncoordinated with pessimistic
                   receiver-based message logging, eq. 11; needs --phi;
                   overhead of eq. 10

In the symbols of Fialho et al. 2011: t_c = --cost, α = --mtti, t_l = --restart,
t_d = --detect, Δ_lp = --log-protect, Δ_lr = --log-replay. Flags a method does not use are
still checked for range, then ignored and listed as such ("ignored" in JSON),
so one command line can be run with every method. When a formula has no real
(positive) optimum the command exits 2 and says why.`

const intervalExample = `  ckpt model interval --method fialho --cost 5m --mtti 24h --restart 5m
  ckpt model interval --method fialho-parallel --cost 1.63 --mtti 100 --restart 1.643 \
      --detect 0.5 --phi 1 --log-protect 2.771 --json`

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
