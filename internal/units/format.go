package units

import (
	"math"
	"strconv"
)

// scale is a display unit, used for magnitudes from "from" upwards.
type scale struct {
	name       string
	size, from float64
}

var (
	// Minutes start at 2 min because short intervals read more naturally in
	// seconds ("90 s" rather than "1.5 min").
	durationScales = []scale{{"s", 1, 0}, {"min", 60, 120}, {"h", 3600, 3600}, {"d", day, day}, {"y", year, year}}
	sizeScales     = []scale{{"B", 1, 0}, {"kB", 1e3, 1e3}, {"MB", 1e6, 1e6}, {"GB", 1e9, 1e9}, {"TB", 1e12, 1e12}, {"PB", 1e15, 1e15}, {"EB", 1e18, 1e18}}
)

// FormatDuration formats seconds with a readable unit among s (below 2 min),
// min, h, d and y, e.g. "0.53 s", "72.5 s", "14.2 min", "3.41 h", "1.37 y".
func FormatDuration(sec float64) string { return formatScaled(sec, durationScales, "") }

// FormatSize formats bytes with decimal units, e.g. "29 GB", "40.8 TB".
func FormatSize(bytes float64) string { return formatScaled(bytes, sizeScales, "") }

// FormatBandwidth formats bytes per second, e.g. "400 MB/s", "6.4 GB/s".
func FormatBandwidth(bps float64) string { return formatScaled(bps, sizeScales, "/s") }

// FormatRate formats events per second, e.g. "1.76e-05 /s". It does not
// switch to /h or /y so that rates in one table column compare at a glance.
func FormatRate(r float64) string {
	if s, ok := nonFinite(r); ok {
		return s
	}
	return sig3(r) + " /s"
}

func formatScaled(v float64, scales []scale, suffix string) string {
	if s, ok := nonFinite(v); ok {
		return s
	}
	a := math.Abs(v)
	i := 0
	for i+1 < len(scales) && a >= scales[i+1].from {
		i++
	}
	// Rounding may carry into the next unit (999.7 GB would print as
	// "1000 GB"); move up so the number stays below the next unit.
	if i+1 < len(scales) && round3(a/scales[i].size) >= scales[i+1].from/scales[i].size {
		i++
	}
	return sig3(v/scales[i].size) + " " + scales[i].name + suffix
}

func nonFinite(v float64) (string, bool) {
	switch {
	case math.IsNaN(v):
		return "NaN", true
	case math.IsInf(v, 1):
		return "inf", true
	case math.IsInf(v, -1):
		return "-inf", true
	}
	return "", false
}

// round3 rounds v to three significant digits.
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}

// sig3 formats v with three significant digits and no trailing zeros, using
// plain decimals where they read well ("1230", "0.53") and exponents only
// for very large or small magnitudes.
func sig3(v float64) string {
	r := round3(v)
	if r == 0 {
		return "0" // also for -0
	}
	if a := math.Abs(r); a >= 1e-4 && a < 1e6 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}
