package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt/internal/units"
)

// measuredAlpha is the overhead factor α taken from a `ckpt bench stage
// --json` report: α = c·x (001 §VI.A), c the slope the benchmark fitted,
// x the read rate of one staging server in GB/s — given, or the
// benchmark's own: its aggregate staging throughput with the most servers
// over their number (as 001 derives 0.20905 GB/s from Fig. 10).
type measuredAlpha struct {
	Alpha, Slope, Rate float64 // α, c per GB/s, x in bytes/s
	File               string
}

type alphaFlags struct {
	from     *string
	readRate *quantity
}

func addAlphaFlags(fs *pflag.FlagSet) alphaFlags {
	return alphaFlags{
		from:     fs.String("alpha-from", "", "take α from a 'ckpt bench stage --json' report: its fitted slope c times the staging read rate"),
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
	var rep struct {
		Slope   *float64 `json:"alpha_slope_per_gbps"`
		Servers []struct {
			Servers int     `json:"servers"`
			Rate    float64 `json:"bytes_per_second"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(text, &rep); err != nil {
		return a, true, usagef("--alpha-from %s: not a 'ckpt bench stage --json' report: %v", *f.from, err)
	}
	if rep.Slope == nil || math.IsNaN(*rep.Slope) || *rep.Slope < 0 {
		return a, true, usagef("--alpha-from %s: no alpha_slope_per_gbps ≥ 0 in it", *f.from)
	}
	a.Slope = *rep.Slope
	if f.readRate.set {
		if f.readRate.v <= 0 {
			return a, true, usagef("--read-rate %g: want a positive bandwidth", f.readRate.v)
		}
		a.Rate = f.readRate.v
	} else {
		best := -1
		for i, s := range rep.Servers {
			if s.Servers > 0 && s.Rate > 0 && (best < 0 || s.Servers > rep.Servers[best].Servers) {
				best = i
			}
		}
		if best < 0 {
			return a, true, usagef("--alpha-from %s: no staging throughput in it; give --read-rate", *f.from)
		}
		a.Rate = rep.Servers[best].Rate / float64(rep.Servers[best].Servers)
	}
	a.Alpha = a.Slope * a.Rate / 1e9
	return a, true, nil
}

func (a measuredAlpha) String() string {
	return fmt.Sprintf("α = %.4g = c %.4g per GB/s × read rate %s (from %s)", a.Alpha, a.Slope, units.FormatBandwidth(a.Rate), a.File)
}
