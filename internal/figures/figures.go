package figures

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/ckpt/ckpt/internal/storage/local"
)

// Figure is one regenerated figure.
type Figure struct {
	// Name is the file stem: WriteAll writes Name+".png" and Name+".svg".
	Name string
	// Title is a one-line title; the plot shows it above its parameters.
	Title string
	// Caption says what the figure shows and states every parameter.
	Caption string
	// Slow marks figures that run the Markov optimiser many times and take
	// seconds rather than milliseconds to build.
	Slow bool
	// Build computes the figure's data and returns the plot. It may be
	// called more than once and from several goroutines.
	Build func() (*plot.Plot, error)
}

// Size of the written figures.
const (
	Width  = 6 * vg.Inch
	Height = 4 * vg.Inch
	// DPI is the resolution of the PNGs: 900 × 600 pixels.
	DPI = 150
)

// IndexFile is the name of the index WriteAll writes next to the figures.
const IndexFile = "figures.md"

// All returns every figure, in the order of the papers.
func All() []Figure {
	var figs []Figure
	figs = append(figs, oldfieldFigures()...)
	figs = append(figs, satoFigures()...)
	figs = append(figs, fialhoFigures()...)
	return figs
}

// WriteAll builds every figure of All and writes it into dir (created if
// missing) as <name>.png and <name>.svg, then writes the index figures.md.
// It returns the paths written, the index last. progress, if not nil, is
// called with each figure's name just before it is built, on the calling
// goroutine.
func WriteAll(dir string, progress func(name string)) ([]string, error) {
	return Write(dir, All(), progress)
}

// Write is WriteAll for a chosen list of figures; the index lists only them.
func Write(dir string, figs []Figure, progress func(name string)) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range figs {
		if progress != nil {
			progress(f.Name)
		}
		p, err := f.Build()
		if err != nil {
			return paths, fmt.Errorf("figure %s: %w", f.Name, err)
		}
		for _, format := range []string{"png", "svg"} {
			path := filepath.Join(dir, f.Name+"."+format)
			if err := savePlot(p, format, path); err != nil {
				return paths, fmt.Errorf("figure %s: %w", f.Name, err)
			}
			paths = append(paths, path)
		}
	}
	index := filepath.Join(dir, IndexFile)
	if err := local.WriteFile(index, []byte(Index(figs)), 0o644); err != nil {
		return paths, err
	}
	return append(paths, index), nil
}

// Index is the Markdown index of figs: one section per figure with its
// image, its files and its caption.
func Index(figs []Figure) string {
	var b strings.Builder
	b.WriteString("# Model figures\n\n")
	b.WriteString("Regenerated from package model by package internal/figures. ")
	b.WriteString("Each figure is written as PNG and SVG (6 in × 4 in); its parameters are stated below and repeated under its title.\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "\n## %s\n\n", f.Title)
		fmt.Fprintf(&b, "![%s](%s.png)\n\n", f.Name, f.Name)
		fmt.Fprintf(&b, "Files: [%s.png](%s.png), [%s.svg](%s.svg)\n\n", f.Name, f.Name, f.Name, f.Name)
		b.WriteString(f.Caption)
		b.WriteString("\n")
	}
	return b.String()
}

// savePlot renders p at Width × Height in format ("png" or "svg") and
// publishes it at path whole and durably (local.WriteFile), so a reader
// never sees a half-written one.
func savePlot(p *plot.Plot, format, path string) error {
	var w io.WriterTo
	if format == "png" {
		c := vgimg.NewWith(vgimg.UseWH(Width, Height), vgimg.UseDPI(DPI))
		p.Draw(draw.New(c))
		w = vgimg.PngCanvas{Canvas: c}
	} else {
		var err error
		if w, err = p.WriterTo(Width, Height, format); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return err
	}
	return local.WriteFile(path, buf.Bytes(), 0o644)
}
