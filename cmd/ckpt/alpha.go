package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/report"
	"github.com/ckpt/ckpt/internal/units"
)

// measuredAlpha is the overhead factor α taken from a report. From a
// `ckpt bench stage --json` report: α = c·x (001 §VI.A), c the slope the
// benchmark fitted, x the read rate of one staging server in GB/s —
// given, or the benchmark's own: its aggregate staging throughput with the
// most servers over their number (as 001 derives 0.20905 GB/s from Fig.
// 10). From a `ckpt run --json` or `ckpt demo --flush ... --json` report:
// the α that run measured (its steps' slowdown while a flush ran).
type measuredAlpha struct {
	Alpha, Slope, Rate float64 // α, c per GB/s, x in bytes/s (Slope and Rate 0 for a run's α)
	File               string
}

type alphaFlags struct {
	from     *string
	readRate *quantity
}

func addAlphaFlags(fs *pflag.FlagSet) alphaFlags {
	return alphaFlags{
		from:     fs.String("alpha-from", "", "take α from a report: 'ckpt bench stage --json' (its fitted slope c times the staging read rate), or 'ckpt run --json' / 'ckpt demo --flush ... --json' (the α the run measured)"),
		readRate: bandwidthFlag(fs, "read-rate", "with --alpha-from: one staging server's read rate x (default: the report's own, aggregate over servers)"),
	}
}

// load reads the report; ok is false when --alpha-from was not given.
func (f alphaFlags) load() (a measuredAlpha, ok bool, err error) {
	if *f.from == "" {
		if f.readRate.set {
			return a, false, usagef("--read-rate: only used with --alpha-from")
		}
		return a, false, nil
	}
	a.File = *f.from
	text, err := os.ReadFile(*f.from)
	if err != nil {
		return a, true, usagef("--alpha-from: %v", err)
	}
	// The reports of the commands that measure α, read with their own
	// types; null (not measured) reads as absent.
	var rep struct {
		bench.StageReport                     // ckpt bench stage
		demo.FlushReport                      // ckpt demo --flush nonblocking|compare
		Flush             *launch.FlushReport `json:"flush"` // ckpt run
	}
	if err := json.Unmarshal(text, &rep); err != nil {
		return a, true, usagef("--alpha-from %s: not a JSON report of ckpt bench stage, run or demo: %v", *f.from, err)
	}
	if rep.AlphaSlope == nil {
		var run *report.Float
		if rep.Flush != nil {
			run = rep.Flush.AlphaMeasured
		}
		if run == nil && rep.NonBlocking != nil && !math.IsNaN(float64(rep.NonBlocking.Alpha)) {
			run = &rep.NonBlocking.Alpha
		}
		switch {
		case run == nil:
			return a, true, usagef("--alpha-from %s: no alpha_slope_per_gbps (ckpt bench stage) nor a measured α (ckpt run, demo) in it", *f.from)
		case math.IsNaN(float64(*run)) || *run < 0:
			return a, true, usagef("--alpha-from %s: the measured α %g is not ≥ 0", *f.from, float64(*run))
		case f.readRate.set:
			return a, true, usagef("--read-rate: applies to a ckpt bench stage report, not to the α a run measured")
		}
		a.Alpha = float64(*run)
		return a, true, nil
	}
	if math.IsNaN(float64(*rep.AlphaSlope)) || *rep.AlphaSlope < 0 {
		return a, true, usagef("--alpha-from %s: no alpha_slope_per_gbps ≥ 0 in it", *f.from)
	}
	a.Slope = float64(*rep.AlphaSlope)
	if f.readRate.set {
		if f.readRate.v <= 0 {
			return a, true, usagef("--read-rate %g: want a positive bandwidth", f.readRate.v)
		}
		a.Rate = f.readRate.v
	} else if a.Rate, err = rep.ReadRate(); err != nil {
		return a, true, usagef("--alpha-from %s: no staging throughput in it; give --read-rate", *f.from)
	}
	a.Alpha = bench.StageAlpha(a.Slope, a.Rate)
	return a, true, nil
}

func (a measuredAlpha) String() string {
	if a.Slope == 0 && a.Rate == 0 {
		return fmt.Sprintf("α = %.4g, measured in the run (from %s)", a.Alpha, a.File)
	}
	return fmt.Sprintf("α = %.4g = c %.4g per GB/s × read rate %s (from %s)", a.Alpha, a.Slope, units.FormatBandwidth(a.Rate), a.File)
}
