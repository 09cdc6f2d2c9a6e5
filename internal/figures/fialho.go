package figures

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ckpt/ckpt/model"
	"github.com/ckpt/ckpt/sim"
)

// Fig. 4 of 003 (Fialho et al.), §4.1 and Table 1: the models' predicted run
// time of a 500-day serial application against the checkpoint interval.
const (
	fialhoWork    = 500 * 86400.0 // T_s: 500 days of failure-free computation
	fialhoCost    = 5 * 60.0      // t_c = δ
	fialhoRestart = 5 * 60.0      // t_l = R
	fialhoDetect  = 0.0           // t_d
)

// runtimeCurve is one model's predicted run time against the interval σ.
type runtimeCurve struct {
	Model   string
	Sigma   []float64 // seconds
	Runtime []float64 // seconds
	// Optimum is the model's own optimal interval (003 Table 1), OptimumRuntime
	// the run time it predicts there.
	Optimum, OptimumRuntime float64
}

// fialhoSeries evaluates the four models of 003 Fig. 4 at every σ for an
// MTTI of mtti seconds: Fialho's eq. 5 turned into a run time (t_d = 0),
// Daly's eq. 1 with R = t_l, and Gropp and Lusk's and Young's first-order
// models (which ignore restarts). The optima are those 003 Table 1 prints: eq. 6, Daly's
// first-order √(2δM) − δ, and √(2δM) for Gropp and Young.
func fialhoSeries(mtti float64, sigmas []float64) ([]runtimeCurve, error) {
	in := func(sigma float64) model.RuntimeInput {
		return model.RuntimeInput{Work: fialhoWork, Interval: sigma, Cost: fialhoCost, MTTI: mtti, Restart: fialhoRestart}
	}
	fialhoOpt, err := model.FialhoInterval(model.IntervalInput{Cost: fialhoCost, MTTI: mtti, Restart: fialhoRestart, Detect: fialhoDetect})
	if err != nil {
		return nil, err
	}
	models := []struct {
		name string
		opt  float64
		run  func(model.RuntimeInput) float64
	}{
		{"Fialho", fialhoOpt, func(r model.RuntimeInput) float64 { return model.FialhoRuntime(r, fialhoDetect) }},
		{"Daly", model.DalyFirstOrder(fialhoCost, mtti), func(r model.RuntimeInput) float64 { t, _ := model.DalyRuntime(r); return t }},
		{"Gropp", model.GroppLusk(fialhoCost, mtti), model.GroppLuskRuntime},
		{"Young", model.Young(fialhoCost, mtti), model.YoungRuntime},
	}
	out := make([]runtimeCurve, len(models))
	for i, m := range models {
		if err := in(m.opt).Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		c := runtimeCurve{Model: m.name, Sigma: sigmas, Runtime: make([]float64, len(sigmas)), Optimum: m.opt, OptimumRuntime: m.run(in(m.opt))}
		for k, s := range sigmas {
			c.Runtime[k] = m.run(in(s))
		}
		out[i] = c
	}
	return out, nil
}

// minuteRange is lo, lo+step, …, hi minutes, in seconds.
func minuteRange(lo, hi, step float64) []float64 {
	var xs []float64
	for m := lo; m <= hi+1e-9; m += step {
		xs = append(xs, m*60)
	}
	return xs
}

const fialhoCaption = "Predicted run time in days of a serial application that needs T_s = 500 days of failure-free computation, against the checkpoint interval σ, for four models: " +
	"Fialho (Fialho et al. 2011, eq. 5 as a run time, T = T_s·α/(α − overhead), detection t_d = 0), Daly (Oldfield et al. 2007, eq. 1 with restart R = t_l), Gropp and Lusk (first-order, no restart) and Young (first-order, no restart). " +
	"Checkpoint cost t_c = 5 min and restart (load) time t_l = 5 min, as in Fialho et al. 2011, Table 1. Each model's optimal interval is marked on its own curve with the values of Fialho et al. 2011, Table 1: " +
	"eq. 6 for Fialho, Daly's first-order √(2t_cα) − t_c (Table 1 prints it for Daly; his higher-order estimate, Oldfield et al. 2007, eq. 2, is %s), and √(2t_cα) for Gropp and Young. " +
	"Gropp and Lusk's run time is taken as T_s(1 + t_c/σ)(1 + σ/(2α)), minimised at √(2t_cα); Young's as T_s(1 + t_c/σ + σ/(2α)); neither counts restarts, so both sit below Daly's and Fialho's curves. " +
	"Black points with 95%% error bars are ckpt's discrete-event simulation (package sim: %d seeded replications per point, exponential failures striking computation, checkpoints and restarts alike), as the paper's figure shows its own simulation beside the models."

func fialhoFigures() []Figure {
	return []Figure{
		{
			Name:    "fialho-fig4a-runtime-24h",
			Title:   "Fialho et al. 2011, Fig. 4(a): predicted run time against the checkpoint interval, MTTI 24 h",
			Caption: "MTTI α = 24 h; σ from 20 to 300 min. " + fmt.Sprintf(fialhoCaption, fmt.Sprintf("%.1f min", model.Daly(fialhoCost, 24*3600)/60), fialhoReplications) + " Optima: Fialho 114.89 min, Daly 115 min, Gropp 120 min, Young 120 min.",
			Build:   func() (*plot.Plot, error) { return buildFialho("(a)", 24, minuteRange(20, 300, 2)) },
		},
		{
			Name:    "fialho-fig4b-runtime-6h",
			Title:   "Fialho et al. 2011, Fig. 4(b): predicted run time against the checkpoint interval, MTTI 6 h",
			Caption: "MTTI α = 6 h; σ from 10 to 150 min. " + fmt.Sprintf(fialhoCaption, fmt.Sprintf("%.1f min", model.Daly(fialhoCost, 6*3600)/60), fialhoReplications) + " Optima: Fialho 54.79 min, Daly 55 min, Gropp 60 min, Young 60 min.",
			Build:   func() (*plot.Plot, error) { return buildFialho("(b)", 6, minuteRange(10, 150, 1)) },
		},
	}
}

func buildFialho(panel string, mttiHours float64, sigmas []float64) (*plot.Plot, error) {
	curves, err := fialhoSeries(mttiHours*3600, sigmas)
	if err != nil {
		return nil, err
	}
	p := newPlot(fmt.Sprintf("Fialho et al. 2011, Fig. 4%s: predicted run time of a 500-day application", panel),
		fmt.Sprintf("MTTI = %g h, t_c = t_l = 5 min, t_d = 0, T_s = 500 days; markers: each model's optimal σ (Fialho et al. 2011, Table 1)", mttiHours))
	p.X.Label.Text = "Checkpoint interval σ (minutes)"
	p.Y.Label.Text = "Predicted run time (days)"
	const day = 86400.0
	for i, c := range curves {
		xs := make([]float64, len(c.Sigma))
		ys := make([]float64, len(c.Sigma))
		for k := range c.Sigma {
			xs[k], ys[k] = c.Sigma[k]/60, c.Runtime[k]/day
		}
		dashes := [][]vg.Length{nil, dashed, dotted, dashDot}[i%4]
		l, err := plotter.NewLine(xyOf(xs, ys))
		if err != nil {
			return nil, err
		}
		l.LineStyle = draw.LineStyle{Color: seriesColor(i), Width: vg.Points(1.6), Dashes: dashes}
		s, err := plotter.NewScatter(plotter.XYs{{X: c.Optimum / 60, Y: c.OptimumRuntime / day}})
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(4), Shape: glyphFor(i)}
		p.Add(l, s)
		p.Legend.Add(fmt.Sprintf("%s: σ_opt = %.2f min, %.1f days", c.Model, c.Optimum/60, c.OptimumRuntime/day), l, s)
	}
	pts, err := fialhoSimulated(mttiHours*3600, sigmas)
	if err != nil {
		return nil, err
	}
	xys := make(plotter.XYs, len(pts))
	errs := make(plotter.YErrors, len(pts))
	for i, pt := range pts {
		xys[i] = plotter.XY{X: pt.sigma / 60, Y: pt.mean / day}
		errs[i].Low, errs[i].High = pt.ci95/day, pt.ci95/day
	}
	sc, eb, err := simulatedPoints(xys, errs, vg.Points(2.5))
	if err != nil {
		return nil, err
	}
	p.Add(sc, eb)
	p.Legend.Add(fmt.Sprintf("simulation, %d replications (95%% CI)", fialhoReplications), sc)
	p.X.Min, p.X.Max = sigmas[0]/60, sigmas[len(sigmas)-1]/60
	step := 60.0
	if p.X.Max <= 150 {
		step = 30
	}
	p.X.Tick.Marker = linearTicks(0, p.X.Max, step, "%g")
	p.Y.Tick.Marker = linearTicks(0, 2000, 20, "%g")
	p.Y.Min, p.Y.Max = math.Floor(p.Y.Min/20)*20, math.Ceil(p.Y.Max/20)*20
	p.Legend.Top = true
	p.Legend.XOffs = -0.6 * vg.Inch
	return p, nil
}

// fialhoReplications is the simulated replications per point of Fig. 4.
const fialhoReplications = 200

// simPoint is the simulated mean run time at one interval.
type simPoint struct{ sigma, mean, ci95 float64 }

// fialhoSimulated simulates the setting of Fig. 4 at eight intervals
// spread over the plotted range (seeded: the figure is reproducible).
func fialhoSimulated(mtti float64, sigmas []float64) ([]simPoint, error) {
	lo, hi := sigmas[0], sigmas[len(sigmas)-1]
	var out []simPoint
	for i := range 8 {
		sigma := lo + (hi-lo)*(float64(i)+0.5)/8
		cfg := sim.Config{Strategy: sim.Coordinated, Work: fialhoWork,
			Levels:   model.Levels{Rates: []float64{1 / mtti}, Cost: []float64{fialhoCost}, Restart: []float64{fialhoRestart}},
			Schedule: model.Schedule{Interval: sigma}}
		res, err := sim.Run(context.Background(), cfg, sim.Replications(fialhoReplications), sim.Seed(uint64(i+1)))
		if err != nil {
			return nil, err
		}
		out = append(out, simPoint{sigma: sigma, mean: res.Seconds.Mean, ci95: res.Seconds.CI95})
	}
	return out, nil
}

func xyOf(xs, ys []float64) plotter.XYs {
	xy := make(plotter.XYs, len(xs))
	for i := range xs {
		xy[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	return xy
}
