package figures

import (
	"fmt"
	"image/color"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// sans is the typeface of every text; gonum/plot embeds Liberation.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot in the common style: a title line followed by
// parameter lines (params may hold several lines separated by "\n"), sans
// fonts of legible sizes, light grid lines.
func newPlot(title, params string) *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = sans
	p.Title.TextStyle.Font.Size = 10
	p.Title.Padding = 6
	p.Title.Text = title
	if params != "" {
		p.Title.Text += "\n" + wrap(params, p.Title.TextStyle, Width-0.3*vg.Inch)
	}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans
		a.Label.TextStyle.Font.Size = 10
		a.Tick.Label.Font = sans
		a.Tick.Label.Font.Size = 9
	}
	p.Legend.TextStyle.Font = sans
	p.Legend.TextStyle.Font.Size = 8.5
	p.Legend.ThumbnailWidth = 0.35 * vg.Inch
	p.Legend.Padding = 1
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 225}
	grid.Horizontal.Color = color.Gray{Y: 225}
	p.Add(grid)
	return p
}

// wrap breaks each line of s after "; " or ", " where it would be wider
// than width in style sty.
func wrap(s string, sty text.Style, width vg.Length) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		cur := ""
		for _, part := range splitAfterAny(line, "; ", ", ") {
			if cur != "" && sty.Width(strings.TrimSpace(cur+part)) > width {
				out = append(out, strings.TrimSpace(cur))
				cur = ""
			}
			cur += part
		}
		out = append(out, strings.TrimSpace(cur))
	}
	return strings.Join(out, "\n")
}

// splitAfterAny splits s after every occurrence of any of the separators.
func splitAfterAny(s string, seps ...string) []string {
	var parts []string
	for len(s) > 0 {
		cut := -1
		for _, sep := range seps {
			if i := strings.Index(s, sep); i >= 0 && (cut < 0 || i+len(sep) < cut) {
				cut = i + len(sep)
			}
		}
		if cut < 0 {
			break
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

// seriesColor is the i-th colour of the palette shared by all figures.
func seriesColor(i int) color.Color { return plotutil.Color(i) }

// dashed is the dash pattern of reference and "blocking" lines.
var dashed = []vg.Length{vg.Points(5), vg.Points(3)}

// dotted is the dash pattern of secondary reference lines.
var dotted = []vg.Length{vg.Points(1.5), vg.Points(2)}

// dashDot is a fourth pattern for curves that may coincide.
var dashDot = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}

// addLine adds the curve (xs[i], ys[i]) with a legend entry. Non-finite
// values split the curve into pieces, so an unreachable point is a gap.
// If glyph is not nil the points are also marked with it.
func addLine(p *plot.Plot, label string, xs, ys []float64, c color.Color, dashes []vg.Length, glyph draw.GlyphDrawer) error {
	ls := draw.LineStyle{Color: c, Width: vg.Points(1.6), Dashes: dashes}
	var thumbs []plot.Thumbnailer
	var piece plotter.XYs
	flush := func() error {
		if len(piece) == 0 {
			return nil
		}
		if len(piece) > 1 {
			l, err := plotter.NewLine(piece)
			if err != nil {
				return err
			}
			l.LineStyle = ls
			p.Add(l)
			if thumbs == nil {
				thumbs = append(thumbs, l)
			}
		}
		if glyph != nil {
			s, err := plotter.NewScatter(piece)
			if err != nil {
				return err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: glyph}
			p.Add(s)
			if len(thumbs) < 2 {
				thumbs = append(thumbs, s)
			}
		}
		piece = nil
		return nil
	}
	for i := range xs {
		if !finite(xs[i]) || !finite(ys[i]) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		piece = append(piece, plotter.XY{X: xs[i], Y: ys[i]})
	}
	if err := flush(); err != nil {
		return err
	}
	if label != "" {
		if thumbs == nil {
			// Nothing reachable: keep the entry so the legend says so.
			l, _ := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}, {X: 1, Y: 1}})
			l.LineStyle = ls
			thumbs = append(thumbs, l)
		}
		p.Legend.Add(label, thumbs...)
	}
	return nil
}

// addHLine adds a horizontal reference line at y across [x0, x1].
func addHLine(p *plot.Plot, label string, y, x0, x1 float64, c color.Color, dashes []vg.Length, width vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: width, Dashes: dashes}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

// addVLine adds a vertical reference line at x across [y0, y1].
func addVLine(p *plot.Plot, label string, x, y0, y1 float64, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1), Dashes: dashes}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

// addLabel writes txt at the data point (x, y), offset by (dx, dy).
func addLabel(p *plot.Plot, x, y float64, txt string, dx, dy vg.Length, size vg.Length, xalign draw.XAlignment) error {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: y}}, Labels: []string{txt}})
	if err != nil {
		return err
	}
	l.Offset = vg.Point{X: dx, Y: dy}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = sans
		l.TextStyle[i].Font.Size = size
		l.TextStyle[i].XAlign = xalign
	}
	p.Add(l)
	return nil
}

// shiftX draws its Plotter moved dx to the right on the canvas, as
// plotter.BarChart's Offset moves bars, so that markers sit on a bar of a
// group. Its data range is the Plotter's.
type shiftX struct {
	plot.Plotter
	dx vg.Length
}

func (s shiftX) Plot(c draw.Canvas, p *plot.Plot) {
	c.Rectangle = c.Rectangle.Add(vg.Point{X: s.dx})
	s.Plotter.Plot(c, p)
}

func (s shiftX) DataRange() (xmin, xmax, ymin, ymax float64) {
	if dr, ok := s.Plotter.(plot.DataRanger); ok {
		return dr.DataRange()
	}
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

// procAxis makes the x axis the number of processors, 2 … 131072 on a log2
// scale, labelled at every second power of two.
func procAxis(a *plot.Axis) {
	a.Label.Text = "Number of compute-node processors n"
	a.Scale = logScale{}
	a.Min, a.Max = 1.6, 160000
	var ticks []plot.Tick
	for e := 1; e <= 17; e++ {
		n := 1 << e
		t := plot.Tick{Value: float64(n)}
		if e%2 == 1 {
			t.Label = procLabel(n)
		}
		ticks = append(ticks, t)
	}
	a.Tick.Marker = plot.ConstantTicks(ticks)
}

// procLabel writes a processor count the way the papers do: 512, 2K, 128K.
func procLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + "K"
	}
	return strconv.Itoa(n)
}

// logTicks labels the powers of ten with %g and marks 2…9 times them; over
// less than three decades it labels 2 and 5 times them too.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	few := math.Log10(hi/lo) < 3
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi*1.0001; e++ {
		v := math.Pow(10, e)
		for i := 1; i < 10; i++ {
			x := v * float64(i)
			if x < lo*0.9999 || x > hi*1.0001 {
				continue
			}
			t := plot.Tick{Value: x}
			if i == 1 || few && (i == 2 || i == 5) {
				t.Label = strconv.FormatFloat(x, 'g', 6, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// logAxis puts a on a log scale with logTicks.
func logAxis(a *plot.Axis) {
	a.Scale = logScale{}
	a.Tick.Marker = logTicks{}
}

// logScale is plot.LogScale with a work-around for gonum/plot v0.17, which
// reserves room for a centred axis label around Norm((min+max)/2), the
// arithmetic midpoint of the range. On a log axis that point lies near the
// far end, so the label (drawn in the middle) would leave a wide empty
// margin at the right or top of the plot. logScale maps that exact value to
// the middle; no data point of these figures falls on it.
type logScale struct{}

func (logScale) Normalize(lo, hi, x float64) float64 {
	if x == 0.5*(lo+hi) {
		return 0.5
	}
	return plot.LogScale{}.Normalize(lo, hi, x)
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// parallelFor runs f(0) … f(n-1) on at most runtime.NumCPU() goroutines and
// returns the error of the lowest index that failed.
func parallelFor(n int, f func(i int) error) error {
	errs := make([]error, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.NumCPU(), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gb formats bytes or bytes/s in decimal GB or TB with three digits.
func gb(x float64) string {
	if x >= 1e12 {
		return fmt.Sprintf("%.3g TB", x/1e12)
	}
	return fmt.Sprintf("%.3g GB", x/1e9)
}

// linearTicks labels lo, lo+step, … hi and puts unlabelled ticks halfway.
func linearTicks(lo, hi, step float64, format string) plot.ConstantTicks {
	var ticks []plot.Tick
	for i := 0; ; i++ {
		v := lo + float64(i)*step/2
		if v > hi+step*1e-9 {
			break
		}
		t := plot.Tick{Value: v}
		if i%2 == 0 {
			t.Label = fmt.Sprintf(format, v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// simulatedPoints draws simulated means as black dots of the given radius
// with their 95% intervals as error bars.
func simulatedPoints(xys plotter.XYs, errs plotter.YErrors, radius vg.Length) (*plotter.Scatter, *plotter.YErrorBars, error) {
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: radius, Shape: draw.CircleGlyph{}}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{xys, errs})
	if err != nil {
		return nil, nil, err
	}
	return sc, eb, nil
}
