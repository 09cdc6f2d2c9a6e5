package figures

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ckpt/ckpt/model"
	"github.com/ckpt/ckpt/sim"
)

// Figures of 001 (Sato et al., SC12), §VI-B and §VI-C, on the TSUBAME2.0
// scenario of SPEC-markov §8 (decimal units).
const (
	tsubameLambda1 = 1.757e-5  // λ1, /s: failure category 1 (one node), recoverable from XOR
	tsubameLambda2 = 1.3774e-6 // λ2, /s: categories 2–5, need the PFS checkpoint
	tsubameC1      = 72.5      // c1 = r1 = 29 GB / 400 MB/s, s (XOR encoding, not scaled)
	tsubameC2      = 5104.0    // c2 = r2 = 40 832 GB / 8 GB/s, s (blocking PFS write and every PFS restart)
	tsubameFlush   = 6380.0    // ℓ2 = 40 832 GB / 6.4 GB/s, s (background copy by 32 staging nodes)
	tsubameAlpha   = 0.00184   // α, slowdown of computation while a copy is in flight
	// tsubameBytes is the PFS checkpoint: 1408 nodes × 29 GB.
	tsubameBytes = 1408 * 29e9
)

// satoCase scales the TSUBAME2.0 scenario: F multiplies both failure
// rates, C the PFS costs (c2 and r2 blocking; ℓ2 and r2 non-blocking).
type satoCase struct{ F, C float64 }

func (c satoCase) String() string {
	return "F=" + strconv.FormatFloat(c.F, 'g', -1, 64) + ", C=" + strconv.FormatFloat(c.C, 'g', -1, 64)
}

// rates are λ1 and λ2 scaled by F.
func rates(f float64) []float64 { return []float64{tsubameLambda1 * f, tsubameLambda2 * f} }

// blockingLevels is the blocking two-level scheme with PFS write c2 and
// PFS restart r2.
func blockingLevels(f, c2, r2 float64) model.Levels {
	return model.Levels{Rates: rates(f), Cost: []float64{tsubameC1, c2}, Restart: []float64{tsubameC1, r2}}
}

// nonBlocking is the non-blocking scheme with background copy flush, PFS
// restart r2 and overhead factor alpha; the blocking part of the flushed
// checkpoint is c1 (SPEC-markov §10 item 8).
func nonBlocking(f, flush, r2, alpha float64) model.NonBlocking {
	return model.NonBlocking{
		Levels:       model.Levels{Rates: rates(f), Cost: []float64{tsubameC1, tsubameC1}, Restart: []float64{tsubameC1, r2}},
		FlushLatency: flush,
		Alpha:        alpha,
	}
}

func (c satoCase) blocking() model.Levels {
	return blockingLevels(c.F, tsubameC2*c.C, tsubameC2*c.C)
}

func (c satoCase) nonBlocking(alpha float64) model.NonBlocking {
	return nonBlocking(c.F, tsubameFlush*c.C, tsubameC2*c.C, alpha)
}

// optimizeNonBlocking is nb.Optimize, with "no feasible schedule" (the
// background copy outlasts every period) reported as efficiency 0 rather
// than as an error. The inputs built here are otherwise always valid.
func optimizeNonBlocking(nb model.NonBlocking) (model.MultilevelResult, error) {
	r, err := nb.Optimize()
	var pe *model.ParamError
	if errors.As(err, &pe) && pe.Param == "flush-latency" {
		return model.MultilevelResult{}, nil
	}
	return r, err
}

// efficiencyPair is Fig. 13's pair of bars for one case.
type efficiencyPair struct {
	Case                  satoCase
	Blocking, NonBlocking model.MultilevelResult
}

// fig13Cases are the nine (F, C) combinations of SPEC-markov §8.
func fig13Cases() []satoCase {
	var cs []satoCase
	for _, f := range []float64{1, 2, 10} {
		for _, c := range []float64{1, 2, 10} {
			cs = append(cs, satoCase{F: f, C: c})
		}
	}
	return cs
}

// efficiencySeries optimises both schemes for every case, in parallel.
func efficiencySeries(cases []satoCase) ([]efficiencyPair, error) {
	out := make([]efficiencyPair, len(cases))
	for i, c := range cases {
		out[i].Case = c
	}
	err := parallelFor(2*len(cases), func(j int) error {
		i := j / 2
		c := cases[i]
		var err error
		if j%2 == 0 {
			out[i].Blocking, err = model.OptimizeBlocking(c.blocking(), model.BlockingOptions{})
		} else {
			out[i].NonBlocking, err = optimizeNonBlocking(c.nonBlocking(tsubameAlpha))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		return nil
	})
	return out, err
}

// Simulated points of Fig. 13: package sim runs each bar's optimal
// schedule under failures (SPEC-markov §4.3 and §5.3's operational rules)
// in seeded replications, each a job of whole periods.
const (
	// fig13Replications is the number of replications of a bar, and
	// fig13Failures the failures a replication is long enough to expect
	// (at least fig13MinPeriods periods): about 4·10⁵ failures a bar,
	// which puts the 95% intervals at ±0.005 or less, well inside the
	// differences between bars.
	fig13Replications = 200
	fig13Failures     = 2000
	fig13MinPeriods   = 16
	// fig13Budget caps the failures simulated for one bar (replications ×
	// periods × the model's failures per period): a bar whose
	// fig13MinReplications replications of fig13MinPeriods periods would
	// exceed it is not simulated, and one that fits gets as many
	// replications, up to fig13Replications, as the budget allows. At
	// (F, C) = (10, 10) one blocking period takes 6.7·10⁷ failures (the
	// 14 h PFS write and restart against a 1.5 h MTBF), seconds of
	// simulation per replication for an efficiency of 10⁻⁷.
	fig13Budget          = 2.4e7
	fig13MinReplications = 16
)

// simBar is the simulation of one bar of Fig. 13.
type simBar struct {
	// Simulated is false when the bar is beyond fig13Budget.
	Simulated bool
	// Config is the simulated job: the bar's optimal schedule, with Work
	// Periods whole periods; Replications and Seed are Run's options.
	Config       sim.Config
	Periods      int
	Replications int
	Seed         uint64
	// FailuresPerPeriod is the model's expected number of failures in one
	// period: the total failure rate times the expected period (E_N for
	// non-blocking).
	FailuresPerPeriod float64
	// Efficiency is the simulated efficiency of the job (work over the mean
	// run time) with its 95% interval.
	Efficiency sim.Estimate
}

// fig13SimConfig is the simulator's job for one bar: the optimised
// schedule r of case c, blocking or non-blocking, without Work.
func fig13SimConfig(c satoCase, nonBlock bool, r model.MultilevelResult) sim.Config {
	if nonBlock {
		nb := c.nonBlocking(tsubameAlpha)
		return sim.Config{Strategy: sim.NonBlocking, Levels: nb.Levels, Schedule: r.Schedule, FlushLatency: nb.FlushLatency, Alpha: nb.Alpha}
	}
	return sim.Config{Strategy: sim.Coordinated, Levels: c.blocking(), Schedule: r.Schedule}
}

// simulateFig13 simulates every bar of pairs: out[i][0] is pair i's
// blocking bar, out[i][1] its non-blocking one. Seeds are fixed (bar j of
// the figure has seed j+1), so the figure is reproducible. The bars run one
// after another, each on every core (sim.Run's workers).
func simulateFig13(pairs []efficiencyPair) ([][2]simBar, error) {
	out := make([][2]simBar, len(pairs))
	for i, pr := range pairs {
		for j, r := range []model.MultilevelResult{pr.Blocking, pr.NonBlocking} {
			b := &out[i][j]
			b.Seed = uint64(2*i + j + 1)
			if r.Efficiency <= 0 || r.Interval <= 0 {
				continue // no feasible schedule: no bar to simulate
			}
			b.Config = fig13SimConfig(pr.Case, j == 1, r)
			total := 0.0
			for _, l := range b.Config.Rates {
				total += l
			}
			b.FailuresPerPeriod = total * r.PeriodSeconds
			b.Periods = max(fig13MinPeriods, int(math.Ceil(fig13Failures/b.FailuresPerPeriod)))
			perRep := float64(b.Periods) * b.FailuresPerPeriod
			b.Replications = int(min(fig13Replications, math.Floor(fig13Budget/perRep)))
			if b.Replications < fig13MinReplications {
				b.Replications = 0
				continue
			}
			b.Config.Work = float64(b.Periods*b.Config.Segments()) * b.Config.Interval
			res, err := sim.Run(context.Background(), b.Config, sim.Replications(b.Replications), sim.Seed(b.Seed))
			if err != nil {
				return nil, fmt.Errorf("%s, simulation: %w", pr.Case, err)
			}
			b.Simulated, b.Efficiency = true, res.Efficiency
		}
	}
	return out, nil
}

// alphaCurve is one case of Fig. 14: the non-blocking efficiency against α,
// the blocking efficiency (which does not depend on α), and the α at which
// the two are equal (NaN if they do not cross inside the α range).
type alphaCurve struct {
	Case        satoCase
	Alphas      []float64
	NonBlocking []float64
	Blocking    float64
	Crossover   float64
}

// fig14Alphas are 25 overhead factors spaced evenly in log α over [1e-3, 10].
func fig14Alphas() []float64 {
	const n = 25
	as := make([]float64, n)
	for i := range as {
		as[i] = math.Pow(10, -3+4*float64(i)/(n-1))
	}
	return as
}

func fig14Cases() []satoCase { return []satoCase{{F: 1, C: 1}, {F: 2, C: 2}, {F: 10, C: 1}} }

// alphaSeries computes the curves of Fig. 14 and locates each crossover to
// a relative precision of 1e-4 with model.SmallestReaching.
func alphaSeries(cases []satoCase, alphas []float64) ([]alphaCurve, error) {
	out := make([]alphaCurve, len(cases))
	for i, c := range cases {
		out[i] = alphaCurve{Case: c, Alphas: alphas, NonBlocking: make([]float64, len(alphas)), Crossover: math.NaN()}
	}
	// One job per (case, α) and one per case for the blocking optimum.
	stride := len(alphas) + 1
	err := parallelFor(len(cases)*stride, func(j int) error {
		cur := &out[j/stride]
		k := j % stride
		if k == len(alphas) {
			r, err := model.OptimizeBlocking(cur.Case.blocking(), model.BlockingOptions{})
			cur.Blocking = r.Efficiency
			return err
		}
		r, err := optimizeNonBlocking(cur.Case.nonBlocking(alphas[k]))
		if err != nil {
			return fmt.Errorf("%s, α = %g: %w", cur.Case, alphas[k], err)
		}
		cur.NonBlocking[k] = r.Efficiency
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = parallelFor(len(cases), func(i int) error {
		cur := &out[i]
		for k := 1; k < len(alphas); k++ {
			if cur.NonBlocking[k-1] <= cur.Blocking || cur.NonBlocking[k] > cur.Blocking {
				continue
			}
			var ferr error
			gap := func(a float64) float64 { // blocking − non-blocking, grows with α
				r, err := optimizeNonBlocking(cur.Case.nonBlocking(a))
				if err != nil && ferr == nil {
					ferr = err
				}
				return cur.Blocking - r.Efficiency
			}
			x, ok := model.SmallestReaching(gap, 0, alphas[k-1], alphas[k])
			if ferr != nil {
				return fmt.Errorf("%s, crossover: %w", cur.Case, ferr)
			}
			if ok {
				cur.Crossover = x
			}
			break
		}
		return nil
	})
	return out, err
}

// Fig. 15: PFS bandwidth needed for a target efficiency.

// Bandwidth search range of Fig. 15, bytes/s.
const (
	minBandwidth = 1e8
	maxBandwidth = 1e14
)

// efficiencyAtBandwidth is the optimised efficiency at failure scale f when
// the PFS moves bw bytes/s: the blocking write and every restart take
// tsubameBytes/bw, and so does the non-blocking background copy (staging
// saturates the PFS). c1, r1 and α are those of TSUBAME2.0.
func efficiencyAtBandwidth(nonBlock bool, f, bw float64) (float64, error) {
	t := tsubameBytes / bw
	if nonBlock {
		r, err := optimizeNonBlocking(nonBlocking(f, t, t, tsubameAlpha))
		return r.Efficiency, err
	}
	r, err := model.OptimizeBlocking(blockingLevels(f, t, t), model.BlockingOptions{})
	return r.Efficiency, err
}

// monotoneMemo remembers the points at which a non-decreasing function has
// been evaluated. For a given target it answers f(x) ≥ target from a known
// point when one decides it (a point at or left of x already reaching the
// target, or one at or right of x falling short) and evaluates f otherwise.
// The value it returns then is the known point's, not f(x): only its side of
// the target is meaningful, which is all model.SmallestReaching looks at.
type monotoneMemo struct {
	f      func(float64) float64
	xs, ys []float64
	evals  int
}

func (m *monotoneMemo) forTarget(target float64) func(float64) float64 {
	return func(x float64) float64 {
		for i, xi := range m.xs {
			yi := m.ys[i]
			if xi == x || xi <= x && yi >= target || xi >= x && yi < target {
				return yi
			}
		}
		return m.eval(x)
	}
}

// eval evaluates f at x and remembers the point.
func (m *monotoneMemo) eval(x float64) float64 {
	y := m.f(x)
	m.evals++
	m.xs = append(m.xs, x)
	m.ys = append(m.ys, y)
	return y
}

// probeDown evaluates f at the decades from hi down to lo and stops at the
// first one below floor, so that every point under it is decided for any
// target ≥ floor. It spares the searches the bottom of the range, where the
// PFS copy takes days, the optimum has hundreds of level-1 checkpoints per
// period and the optimiser is slowest, while the answer is plainly "no".
func (m *monotoneMemo) probeDown(lo, hi, floor float64) {
	for e := math.Floor(math.Log10(hi)); e >= math.Ceil(math.Log10(lo)); e-- {
		if m.eval(math.Pow(10, e)) < floor {
			return
		}
	}
}

// bandwidthCurve is one curve of Fig. 15: the smallest PFS bandwidth
// (bytes/s) reaching Target efficiency at each failure scale, NaN where no
// bandwidth up to maxBandwidth reaches it.
type bandwidthCurve struct {
	NonBlocking bool
	Target      float64
	F           []float64
	Bandwidth   []float64
}

func fig15Scales() []float64 {
	fs := make([]float64, 16)
	for i := range fs {
		fs[i] = float64(i + 1)
	}
	return fs
}

var fig15Targets = []float64{0.9, 0.8, 0.7}

// bandwidthSeries finds the bandwidths of Fig. 15 with model.SmallestReaching
// over [minBandwidth, maxBandwidth]. One job per scheme and failure scale
// runs the searches of all targets against one monotoneMemo, so endpoints
// and decided points are evaluated once; jobs run on parallelFor's pool.
// It also returns the number of optimisations it ran.
func bandwidthSeries(fs, targets []float64) ([]bandwidthCurve, int, error) {
	out := make([]bandwidthCurve, 0, 2*len(targets))
	for _, nb := range []bool{true, false} {
		for _, t := range targets {
			c := bandwidthCurve{NonBlocking: nb, Target: t, F: fs, Bandwidth: make([]float64, len(fs))}
			out = append(out, c)
		}
	}
	evals := make([]int, 2*len(fs))
	err := parallelFor(2*len(fs), func(j int) error {
		nb, i := j < len(fs), j%len(fs)
		var ferr error
		m := &monotoneMemo{f: func(bw float64) float64 {
			e, err := efficiencyAtBandwidth(nb, fs[i], bw)
			if err != nil && ferr == nil {
				ferr = err
			}
			return e
		}}
		m.probeDown(minBandwidth, maxBandwidth, slices.Min(targets))
		for k, t := range targets {
			x, ok := model.SmallestReaching(m.forTarget(t), t, minBandwidth, maxBandwidth)
			if ferr != nil {
				return fmt.Errorf("F = %g: %w", fs[i], ferr)
			}
			if !ok {
				x = math.NaN()
			}
			curve := k
			if !nb {
				curve += len(targets)
			}
			out[curve].Bandwidth[i] = x
		}
		evals[j] = m.evals
		return nil
	})
	total := 0
	for _, e := range evals {
		total += e
	}
	return out, total, err
}

// Rendering.

const satoParams = "TSUBAME2.0 (Sato et al. 2012): λ1 = 1.757e-5·F /s, λ2 = 1.3774e-6·F /s, c1 = r1 = 72.5 s"

// fig13Colors are the colours of the blocking and non-blocking bars.
var fig13Colors = []int{2, 3}

const satoCaptionCommon = "Two-level checkpointing on TSUBAME2.0 as in Sato et al. 2012 (decimal units): level-1 (XOR, node-local) failure rate λ1 = 1.757e-5·F /s, level-2 (categories 2–5) rate λ2 = 1.3774e-6·F /s, " +
	"c1 = r1 = 29 GB / 400 MB/s = 72.5 s (not scaled); blocking (Moody et al., model.OptimizeBlocking) c2 = r2 = 40 832 GB / 8 GB/s = 5104·C s; " +
	"non-blocking (model.NonBlocking) level-2 cost = c1 = 72.5 s blocking, background copy ℓ2 = 40 832 GB / 6.4 GB/s = 6380·C s, restart r2 = 5104·C s, overhead factor α = 0.00184 unless stated. " +
	"Efficiency = ideal time / expected time, maximised over the interval t and the level-1 count v (docs/MODELS.md, Optimiser)."

func satoFigures() []Figure {
	return []Figure{
		{
			Name:  "sato-fig13-efficiency",
			Title: "Sato et al. 2012, Fig. 13: efficiency of blocking and non-blocking checkpointing",
			Caption: "Optimised efficiency of blocking and non-blocking checkpointing for failure-rate scale F and PFS-cost scale C in {1, 2, 10}² (all nine combinations; the paper's exact grid is not recoverable). " +
				satoCaptionCommon + " Non-blocking is better in every case; at (F, C) = (10, 10) both are essentially 0 (a 14 h PFS write or restart against a 1.5 h MTBF), kept as the honest result. " +
				fmt.Sprintf("Black points with 95%% error bars are ckpt's discrete-event simulation (package sim, which follows the operational rules of the Markov models, docs/MODELS.md) of each bar's optimal schedule: "+
					"%d seeded replications of a job of whole periods long enough for about %d failures (at least %d periods); each agrees with the model within 4 standard errors (tested), as the validation in docs/MODELS.md reports. "+
					"A non-blocking job's first period has no copy in flight, which raises its efficiency above the long-run bar by under 0.1%% here. "+
					"At (10, 10) the simulation is capped at %.1e failures a bar: non-blocking gets %d replications of %d periods (its first period then adds 4%% to an efficiency of 1e-4, within the noise); "+
					"blocking is not simulated, one of its periods taking 6.7e7 failures.",
					fig13Replications, fig13Failures, fig13MinPeriods, fig13Budget, fig13MinReplications, fig13MinPeriods),
			Slow:  true,
			Build: buildFig13,
		},
		{
			Name:  "sato-fig14-alpha",
			Title: "Sato et al. 2012, Fig. 14: efficiency against the overhead factor α",
			Caption: "Optimised non-blocking efficiency (solid) against the overhead factor α, 25 values spaced evenly in log α over [0.001, 10], for (F, C) = (1, 1), (2, 2) and (10, 1); the dashed line of the same colour is the blocking efficiency, which does not depend on α. " +
				satoCaptionCommon + " Vertical dotted lines mark where the two are equal: α ≈ 2.78 for F = C = 1 (docs/MODELS.md, Figures), later for the larger F and C, so blocking wins only for very large α at current rates.",
			Slow:  true,
			Build: buildFig14,
		},
		{
			Name:  "sato-fig15-bandwidth",
			Title: "Sato et al. 2012, Fig. 15: PFS bandwidth required for 90/80/70 % efficiency",
			Caption: "Smallest PFS bandwidth B (model.SmallestReaching over [100 MB/s, 100 TB/s], relative precision 1e-4) at which the optimised efficiency reaches 90 %, 80 % and 70 %, against the failure-rate scale F = 1 … 16; non-blocking solid, blocking dashed. " +
				"The PFS checkpoint is 1408 nodes × 29 GB = 40.832 TB: blocking c2 = r2 = 40.832 TB / B; non-blocking background copy ℓ2 = r2 = 40.832 TB / B (staging saturates the PFS) with a blocking part c1; c1 = r1 = 72.5 s, α = 0.00184, λ1 = 1.757e-5·F /s, λ2 = 1.3774e-6·F /s. " +
				"A missing point means no bandwidth up to 100 TB/s reaches the target: non-blocking pays c1 = 72.5 s at every checkpoint, so its efficiency is capped (about 0.94 at F = 1, 0.77 at F = 16) and its 90 % curve stops after F = 3 and its 80 % curve after F = 12. " +
				"The paper notes that blocking at 90 % is off its chart; here it needs 44 GB/s at F = 1 and about 2.5 TB/s at F = 16.",
			Slow:  true,
			Build: buildFig15,
		},
	}
}

// shortNum writes an efficiency for a bar label: two decimals, or one
// significant digit in scientific notation below 0.01.
func shortNum(v float64) string {
	if v >= 0.01 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(v, 'e', 0, 64) // "1e-07"
	return strings.Replace(strings.Replace(s, "e-0", "e-", 1), "e+0", "e+", 1)
}

// The data of Figs. 13-15 depend on constants only, and take seconds to
// minutes of optimisation and simulation: each is computed once per
// process, and the figure and the tests that check it share it (read
// only).
var (
	fig13Pairs = sync.OnceValues(func() ([]efficiencyPair, error) { return efficiencySeries(fig13Cases()) })
	fig13Sims  = sync.OnceValues(func() ([][2]simBar, error) {
		pairs, err := fig13Pairs()
		if err != nil {
			return nil, err
		}
		return simulateFig13(pairs)
	})
	fig14Curves = sync.OnceValues(func() ([]alphaCurve, error) { return alphaSeries(fig14Cases(), fig14Alphas()) })
	fig15Curves = sync.OnceValues(func() (fig15Data, error) {
		curves, evals, err := bandwidthSeries(fig15Scales(), fig15Targets)
		return fig15Data{curves, evals}, err
	})
)

// fig15Data is the result of bandwidthSeries for Fig. 15.
type fig15Data struct {
	curves []bandwidthCurve
	evals  int // optimisations run
}

func buildFig13() (*plot.Plot, error) {
	pairs, err := fig13Pairs()
	if err != nil {
		return nil, err
	}
	sims, err := fig13Sims()
	if err != nil {
		return nil, err
	}
	p := newPlot("Sato et al. 2012, Fig. 13: optimised efficiency, blocking vs non-blocking",
		satoParams+"\nblocking c2 = r2 = 5104·C s; non-blocking ℓ2 = 6380·C s, r2 = 5104·C s, α = 0.00184; black: simulation, 95% CI")
	var blk, nbk plotter.Values
	var names []string
	for _, pr := range pairs {
		blk = append(blk, pr.Blocking.Efficiency)
		nbk = append(nbk, pr.NonBlocking.Efficiency)
		names = append(names, fmt.Sprintf("F=%g\nC=%g", pr.Case.F, pr.Case.C))
	}
	w := vg.Points(15)
	var simThumb plot.Thumbnailer
	for i, b := range []struct {
		label string
		vals  plotter.Values
	}{{"blocking (Moody)", blk}, {"non-blocking", nbk}} {
		bc, err := plotter.NewBarChart(b.vals, w)
		if err != nil {
			return nil, err
		}
		bc.Color = seriesColor(fig13Colors[i])
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(2*i-1) / 2
		p.Add(bc)
		p.Legend.Add(b.label, bc)
		for k, v := range b.vals {
			// Above the simulated point's marker, if any.
			dy := vg.Points(2)
			if sims[k][i].Simulated {
				dy = vg.Points(4)
			}
			if err := addLabel(p, float64(k), v, shortNum(v), bc.Offset, dy, 6.5, draw.XCenter); err != nil {
				return nil, err
			}
		}
		var xys plotter.XYs
		var errs plotter.YErrors
		for k := range pairs {
			if sb := sims[k][i]; sb.Simulated {
				xys = append(xys, plotter.XY{X: float64(k), Y: sb.Efficiency.Mean})
				errs = append(errs, struct{ Low, High float64 }{sb.Efficiency.CI95, sb.Efficiency.CI95})
			}
		}
		sc, eb, err := simulatedPoints(xys, errs, vg.Points(1.8))
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Width = vg.Points(0.8)
		eb.CapWidth = vg.Points(5)
		p.Add(shiftX{eb, bc.Offset}, shiftX{sc, bc.Offset})
		simThumb = sc
	}
	p.Legend.Add("simulation (package sim), 95% CI", simThumb)
	p.NominalX(names...)
	p.X.Label.Text = "Failure-rate scale F and PFS-cost scale C"
	p.Y.Label.Text = "Optimised efficiency (ideal / expected time)"
	p.Y.Min, p.Y.Max = 0, 1.08
	p.Y.Tick.Marker = linearTicks(0, 1, 0.2, "%.1f")
	p.Legend.Top = true
	p.Legend.XOffs = -6
	return p, nil
}

func buildFig14() (*plot.Plot, error) {
	alphas := fig14Alphas()
	curves, err := fig14Curves()
	if err != nil {
		return nil, err
	}
	p := newPlot("Sato et al. 2012, Fig. 14: efficiency against the overhead factor α",
		satoParams+"\nblocking c2 = r2 = 5104·C s; non-blocking ℓ2 = 6380·C s, r2 = 5104·C s; t and v optimised")
	p.X.Label.Text = "Overhead factor α (computation slowdown while a copy is in flight)"
	logAxis(&p.X)
	p.X.Min, p.X.Max = alphas[0], alphas[len(alphas)-1]
	p.Y.Label.Text = "Efficiency"
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = linearTicks(0, 1, 0.2, "%.1f")
	for i, c := range curves {
		col := seriesColor(i)
		if err := addLine(p, "non-blocking, "+c.Case.String(), alphas, c.NonBlocking, col, nil, glyphFor(i)); err != nil {
			return nil, err
		}
	}
	for i, c := range curves {
		col := seriesColor(i)
		if err := addHLine(p, fmt.Sprintf("blocking, %s (%.3f)", c.Case, c.Blocking), c.Blocking, alphas[0], alphas[len(alphas)-1], col, dashed, vg.Points(1.4)); err != nil {
			return nil, err
		}
		if finite(c.Crossover) {
			if err := addVLine(p, "", c.Crossover, 0, c.Blocking, col, dotted); err != nil {
				return nil, err
			}
			if err := addLabel(p, c.Crossover, c.Blocking, fmt.Sprintf("α = %.2f", c.Crossover), vg.Points(-3), vg.Points(-12), 7.5, draw.XRight); err != nil {
				return nil, err
			}
		}
	}
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = 4, 4
	return p, nil
}

func buildFig15() (*plot.Plot, error) {
	fs := fig15Scales()
	data, err := fig15Curves()
	if err != nil {
		return nil, err
	}
	curves := data.curves
	p := newPlot("Sato et al. 2012, Fig. 15: PFS bandwidth required for a target efficiency",
		"1408 × 29 GB = 40.832 TB; blocking c2 = r2 = 40.832 TB/B; non-blocking ℓ2 = r2 = 40.832 TB/B\n"+
			"TSUBAME2.0 λ1, λ2 × F; c1 = r1 = 72.5 s; α = 0.00184; gaps: unreachable with B ≤ 100 TB/s")
	p.X.Label.Text = "Failure-rate scale F (× today's TSUBAME2.0 rates)"
	var ticks []plot.Tick
	for _, f := range fs {
		ticks = append(ticks, plot.Tick{Value: f, Label: strconv.FormatFloat(f, 'g', -1, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 0.5, 16.5
	p.Y.Label.Text = "Required PFS bandwidth B (GB/s)"
	logAxis(&p.Y)
	p.Y.Min, p.Y.Max = 0.2, 5000
	for _, c := range curves {
		k := slices.Index(fig15Targets, c.Target)
		ys := make([]float64, len(c.Bandwidth))
		for i, b := range c.Bandwidth {
			ys[i] = b / 1e9
		}
		label, dashes := "non-blocking", []vg.Length(nil)
		if !c.NonBlocking {
			label, dashes = "blocking", dashed
		}
		label = fmt.Sprintf("%s, %.0f %%", label, 100*c.Target)
		if err := addLine(p, label, c.F, ys, seriesColor(k), dashes, glyphFor(k)); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = false
	p.Legend.XOffs, p.Legend.YOffs = -4, 4
	return p, nil
}
