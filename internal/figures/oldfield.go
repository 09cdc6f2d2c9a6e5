package figures

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ckpt/ckpt/model"
)

// Figures of 000 (Oldfield et al., MSST 2007), §3.3 and §4.3.

// storageSetup is one of the three checkpoint targets of 000: a parallel
// file system, lightweight object storage, or lightweight storage behind an
// overlay-network buffer.
type storageSetup struct {
	Label   string
	Storage model.Storage
	Overlay bool
}

var (
	setupPFS     = storageSetup{Label: "PFS", Storage: model.StoragePFS}
	setupLWFS    = storageSetup{Label: "LWFS", Storage: model.StorageLWFS}
	setupOverlay = storageSetup{Label: "LWFS+overlay", Storage: model.StorageLWFS, Overlay: true}
)

// The overlay network of 000 §4.3: 1024 intermediate-node processors, each
// with twice the memory of a compute-node processor.
const (
	overlayProcs     = 1024
	overlayMemFactor = 2
)

// overlayBytes is μ, the overlay network's memory for sys.
func overlayBytes(sys model.MPPSystem) float64 {
	return overlayProcs * overlayMemFactor * sys.MemPerProc
}

// procCounts are the processor counts of 000's figures: 2, 4, …, 131072.
func procCounts() []int {
	var ns []int
	for n := 2; n <= 1<<17; n *= 2 {
		ns = append(ns, n)
	}
	return ns
}

// oldfieldPoint is the model's result at one processor count.
type oldfieldPoint struct {
	Procs int
	model.OldfieldResult
}

// oldfieldSeries evaluates 000's checkpoint model for sys with each count
// in procs: d = d_max/2, M = M_dev/n, α_c of the storage, and μ of the
// overlay if the setup has one.
func oldfieldSeries(sys model.MPPSystem, setup storageSetup, procs []int) ([]oldfieldPoint, error) {
	out := make([]oldfieldPoint, 0, len(procs))
	for _, n := range procs {
		in := sys.Input(n, setup.Storage)
		if setup.Overlay {
			in.OverlayBytes = overlayBytes(sys)
		}
		r, err := model.Oldfield(in)
		if err != nil {
			return nil, fmt.Errorf("%s, %s, n = %d: %w", sys.Name, setup.Label, n, err)
		}
		out = append(out, oldfieldPoint{Procs: n, OldfieldResult: r})
	}
	return out, nil
}

// checkpointPercent is 000's T_δ/(T_s+T_δ) in percent.
func checkpointPercent(pts []oldfieldPoint) []float64 {
	out := make([]float64, len(pts))
	for i, p := range pts {
		out[i] = 100 * p.CheckpointFraction
	}
	return out
}

// relativeDifference is 000 §4.3's (P_fs − P_overlay)/P_fs, in percent,
// point by point.
func relativeDifference(fs, overlay []oldfieldPoint) []float64 {
	out := make([]float64, len(fs))
	for i := range fs {
		pf, po := fs[i].CheckpointFraction, overlay[i].CheckpointFraction
		out[i] = 100 * (pf - po) / pf
	}
	return out
}

func procsX(pts []oldfieldPoint) []float64 {
	xs := make([]float64, len(pts))
	for i, p := range pts {
		xs[i] = float64(p.Procs)
	}
	return xs
}

func mapPoints(pts []oldfieldPoint, f func(oldfieldPoint) float64) []float64 {
	ys := make([]float64, len(pts))
	for i, p := range pts {
		ys[i] = f(p)
	}
	return ys
}

// shortName is the legend name of a 000 Table 1 system.
func shortName(sys model.MPPSystem) string {
	if i := strings.Index(sys.Title, " ("); i > 0 {
		return sys.Title[:i]
	}
	return sys.Title
}

// systemsText states the Table 1 parameters of every system.
func systemsText() string {
	var parts []string
	for _, s := range model.MPPSystems {
		parts = append(parts, fmt.Sprintf("%s: %d×%d processors, d_max = %s, β_s = %s/s, β_n = %s/s, β_L = %s/s",
			shortName(s), s.Nodes, s.CoresPerNode, gb(s.MemPerProc), gb(s.StorageBW), gb(s.BisectionBW), gb(s.LinkBW)))
	}
	return strings.Join(parts, "; ")
}

// common000 is the part of every 000 caption that fixes the workload.
const common000 = "Every processor checkpoints half of its memory (d = d_max/2); the job's MTTI is M = M_dev/n with M_dev = 5 years of 365 days per processor; " +
	"the checkpoint overhead is δ = α_c + nd/min(nβ_L, β_n, β_s) (Oldfield et al. 2007, §3.1) and the interval is Daly's τ_opt-D (Oldfield et al. 2007, eq. 2); n runs over the powers of two 2 … 131072 for every system, as in the paper."

const overlayText = "The overlay network has 1024 processors with twice the memory of a compute-node processor each (μ = 2048·d_max; 2.048 TB on Red Storm); " +
	"δ follows Oldfield et al. 2007, eq. 3 with k = μ/(1 − β_s/β_N), β_N = min(nβ_L, β_n), and τ_opt = max(τ_opt-D, τ_lb) with τ_lb of eq. 4."

const lwfsText = "LWFS has the start-up cost α_c = n/60000 s (Oldfield et al. 2007, §4.1); PFS has α_c = 0."

// params000 and paramsRedStorm are the parameter lines of the plots.
const (
	params000      = "d = d_max/2, M = 5 y/n, Table 1 systems"
	paramsRedStorm = "Red Storm: d = 0.5 GB, M = 5 y/n, β_L = 4.8 GB/s, β_n = 2.3 TB/s, β_s = 50 GB/s"
)

func oldfieldFigures() []Figure {
	return []Figure{
		{
			Name:  "oldfield-fig2-interval",
			Title: "Oldfield et al. 2007, Fig. 2: optimal checkpoint interval vs processors",
			Caption: "Daly's optimal checkpoint interval τ_opt-D against the number of compute-node processors for the four systems of Oldfield et al. 2007, Table 1, checkpointing to the parallel file system (α_c = 0). " +
				common000 + " Systems: " + systemsText() + ". " +
				"The interval falls as n grows (the job's MTTI falls as 1/n); once the storage bandwidth bounds δ (from n = 16 on Red Storm, Jaguar and Petaflop, n = 64 on BlueGene/L) δ·M is constant and the fall flattens until δ approaches 2M.",
			Build: buildFig2,
		},
		{
			Name:  "oldfield-fig3-throughput",
			Title: "Oldfield et al. 2007, Fig. 3: modeled checkpoint throughput vs processors",
			Caption: "Modeled checkpoint throughput nd/(δ − α_c) = min(nβ_L, β_n, β_s) against n for the four systems of Oldfield et al. 2007, Table 1, PFS with α_c = 0. " +
				common000 + " Systems: " + systemsText() + ". " +
				"Throughput grows with the aggregate link bandwidth nβ_L and saturates at the storage bandwidth β_s (dotted lines); the bisection bandwidth never binds.",
			Build: buildFig3,
		},
		{
			Name:  "oldfield-fig4-overhead",
			Title: "Oldfield et al. 2007, Fig. 4: time spent checkpointing vs processors",
			Caption: "Share of execution time spent checkpointing, T_δ/(T_s + T_δ) = δ/(τ_opt + δ) in percent, against n for the four systems of Oldfield et al. 2007, Table 1, PFS with α_c = 0. " +
				common000 + " Systems: " + systemsText() + ".",
			Build: buildFig4,
		},
		{
			Name:  "oldfield-fig7-interval-redstorm",
			Title: "Oldfield et al. 2007, Fig. 7: optimal interval on Red Storm, PFS / LWFS / LWFS+overlay",
			Caption: "Optimal checkpoint interval τ_opt against n on Red Storm (d_max = 1 GB, β_s = 50 GB/s, β_n = 2.3 TB/s, β_L = 4.8 GB/s) for the parallel file system, LWFS and LWFS+overlay. " +
				common000 + " " + lwfsText + " " + overlayText +
				" Cheaper checkpoints shorten the optimal interval (Oldfield et al. 2007, §4.3).",
			Build: buildFig7,
		},
		{
			Name:  "oldfield-fig8-overlay-throughput",
			Title: "Oldfield et al. 2007, Fig. 8: LWFS+overlay checkpoint throughput on Red Storm",
			Caption: "Effective throughput nd/(δ − α_c) of an LWFS+overlay checkpoint on Red Storm (d_max = 1 GB, β_s = 50 GB/s, β_n = 2.3 TB/s, β_L = 4.8 GB/s) against n; the marker shape says which bandwidth bounds it: the aggregate link bandwidth nβ_L, the bisection bandwidth β_n, or (once the checkpoint nd exceeds k ≈ 2.09 TB, from n = 8192) the storage bandwidth β_s for the part that does not fit the overlay. " +
				common000 + " " + lwfsText + " " + overlayText,
			Build: buildFig8,
		},
		{
			Name:  "oldfield-fig9-overlay-overhead",
			Title: "Oldfield et al. 2007, Fig. 9: LWFS+overlay time spent checkpointing",
			Caption: "Share of execution time spent checkpointing, δ/(τ_opt + δ) in percent, with LWFS+overlay against n for the four systems of Oldfield et al. 2007, Table 1 (the paper draws bars; lines here). " +
				common000 + " " + lwfsText + " " + overlayText + " Systems: " + systemsText() + ".",
			Build: buildFig9,
		},
		{
			Name:  "oldfield-fig10-relative-difference",
			Title: "Oldfield et al. 2007, Fig. 10: relative difference PFS vs LWFS+overlay",
			Caption: "Relative difference (P_fs − P_overlay)/P_fs in percent between the checkpoint percentages of the parallel file system (α_c = 0, no overlay) and of LWFS+overlay, against n for the four systems of Oldfield et al. 2007, Table 1 (the paper draws bars; lines here). " +
				"100 % means the overlay hides the checkpoint entirely, 0 % that it gains nothing; small negative values at small n are the LWFS start-up cost α_c, which the PFS does not pay. " +
				common000 + " " + lwfsText + " " + overlayText + " Systems: " + systemsText() + ".",
			Build: buildFig10,
		},
	}
}

// systemLines plots y(point) against n for every Table 1 system.
func systemLines(p *plot.Plot, setup storageSetup, y func(oldfieldPoint) float64) error {
	for i, sys := range model.MPPSystems {
		pts, err := oldfieldSeries(sys, setup, procCounts())
		if err != nil {
			return err
		}
		if err := addLine(p, shortName(sys), procsX(pts), mapPoints(pts, y), seriesColor(i), nil, glyphFor(i)); err != nil {
			return err
		}
	}
	return nil
}

// glyphFor is the marker of the i-th series, so series stay apart in grey.
func glyphFor(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}
	return shapes[i%len(shapes)]
}

func minutes(p oldfieldPoint) float64 { return p.Interval / 60 }

func buildFig2() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 2: Daly's optimal checkpoint interval τ_opt-D", "PFS (α_c = 0), "+params000)
	procAxis(&p.X)
	p.Y.Label.Text = "Optimal checkpoint interval (minutes)"
	logAxis(&p.Y)
	if err := systemLines(p, setupPFS, minutes); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 10, 200
	p.Legend.Top = true
	p.Legend.XOffs = -6
	return p, nil
}

func buildFig3() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 3: modeled checkpoint throughput min(nβ_L, β_n, β_s)", "PFS (α_c = 0), "+params000+"; dotted: β_s")
	procAxis(&p.X)
	p.Y.Label.Text = "Checkpoint throughput (GB/s)"
	logAxis(&p.Y)
	if err := systemLines(p, setupPFS, func(pt oldfieldPoint) float64 { return pt.Bandwidth / 1e9 }); err != nil {
		return nil, err
	}
	for i, sys := range model.MPPSystems {
		if err := addHLine(p, "", sys.StorageBW/1e9, 1.6, 160000, seriesColor(i), dotted, vg.Points(1)); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 1, 1000
	p.Legend.Top = false
	p.Legend.XOffs, p.Legend.YOffs = -6, 6
	return p, nil
}

func buildFig4() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 4: share of execution time spent checkpointing", "PFS (α_c = 0), "+params000)
	procAxis(&p.X)
	p.Y.Label.Text = "Checkpoint overhead δ/(τ+δ) (%)"
	if err := systemLines(p, setupPFS, func(pt oldfieldPoint) float64 { return 100 * pt.CheckpointFraction }); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = linearTicks(0, 100, 20, "%g")
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = 4
	return p, nil
}

var redStorm = model.MPPSystems[0]

func buildFig7() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 7: optimal checkpoint interval on Red Storm",
		paramsRedStorm+"; LWFS α_c = n/60000 s; overlay μ = 1024 × 2 GB")
	procAxis(&p.X)
	p.Y.Label.Text = "Optimal checkpoint interval τ_opt (minutes)"
	logAxis(&p.Y)
	for i, setup := range []storageSetup{setupPFS, setupLWFS, setupOverlay} {
		pts, err := oldfieldSeries(redStorm, setup, procCounts())
		if err != nil {
			return nil, err
		}
		var dashes []vg.Length
		if setup == setupLWFS {
			dashes = dashed
		}
		if err := addLine(p, setup.Label, procsX(pts), mapPoints(pts, minutes), seriesColor(i), dashes, glyphFor(i)); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = 2, 100
	p.Legend.XOffs, p.Legend.YOffs = -6, 6
	return p, nil
}

func buildFig8() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 8: LWFS+overlay checkpoint throughput on Red Storm",
		paramsRedStorm+"; α_c = n/60000 s; μ = 1024 × 2 GB; marker: binding bandwidth")
	procAxis(&p.X)
	p.Y.Label.Text = "Effective checkpoint throughput (GB/s)"
	logAxis(&p.Y)
	pts, err := oldfieldSeries(redStorm, setupOverlay, procCounts())
	if err != nil {
		return nil, err
	}
	if err := addLine(p, "", procsX(pts), mapPoints(pts, func(pt oldfieldPoint) float64 { return pt.Bandwidth / 1e9 }), color.Gray{Y: 110}, nil, nil); err != nil {
		return nil, err
	}
	for i, b := range []struct {
		bound model.Bound
		label string
	}{{model.BoundLink, "link-bound (nβ_L)"}, {model.BoundBisection, "bisection-bound (β_n)"}, {model.BoundStorage, "storage-bound (nd > k)"}} {
		var xy plotter.XYs
		for _, pt := range pts {
			if pt.Bound == b.bound {
				xy = append(xy, plotter.XY{X: float64(pt.Procs), Y: pt.Bandwidth / 1e9})
			}
		}
		if len(xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: seriesColor(i + 1), Radius: vg.Points(3.5), Shape: glyphFor(i)}
		p.Add(s)
		p.Legend.Add(b.label, s)
	}
	if err := addHLine(p, "β_n = 2.3 TB/s", redStorm.BisectionBW/1e9, 1.6, 160000, seriesColor(2), dotted, vg.Points(1)); err != nil {
		return nil, err
	}
	if err := addHLine(p, "β_s = 50 GB/s", redStorm.StorageBW/1e9, 1.6, 160000, seriesColor(3), dotted, vg.Points(1)); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 5, 5000
	p.Legend.XOffs, p.Legend.YOffs = -6, 6
	return p, nil
}

func buildFig9() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 9: LWFS+overlay share of time spent checkpointing",
		params000+"; α_c = n/60000 s; μ = 1024 × 2 d_max")
	procAxis(&p.X)
	p.Y.Label.Text = "Checkpoint overhead δ/(τ+δ) (%)"
	if err := systemLines(p, setupOverlay, func(pt oldfieldPoint) float64 { return 100 * pt.CheckpointFraction }); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = linearTicks(0, 100, 20, "%g")
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = 4
	return p, nil
}

func buildFig10() (*plot.Plot, error) {
	p := newPlot("Oldfield et al. 2007, Fig. 10: relative difference (P_fs − P_overlay)/P_fs",
		params000+"; PFS α_c = 0; LWFS+overlay α_c = n/60000 s, μ = 1024 × 2 d_max")
	procAxis(&p.X)
	p.Y.Label.Text = "Relative difference (%)"
	for i, sys := range model.MPPSystems {
		fs, err := oldfieldSeries(sys, setupPFS, procCounts())
		if err != nil {
			return nil, err
		}
		ov, err := oldfieldSeries(sys, setupOverlay, procCounts())
		if err != nil {
			return nil, err
		}
		if err := addLine(p, shortName(sys), procsX(fs), relativeDifference(fs, ov), seriesColor(i), nil, glyphFor(i)); err != nil {
			return nil, err
		}
	}
	p.Y.Min, p.Y.Max = -5, 100
	p.Y.Tick.Marker = linearTicks(0, 100, 20, "%g")
	p.Legend.Top = true
	p.Legend.XOffs = -6
	return p, nil
}
