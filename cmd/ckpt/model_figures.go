package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/figures"
)

func newFiguresCmd() *cobra.Command {
	c := leaf("figures --out DIR", "Regenerate the papers' model figures as PNG and SVG", figuresLong, `  ckpt model figures --out figures/`)
	out := c.Flags().String("out", "", "directory to write the figures into (created if missing; required)")
	asJSON := jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if *out == "" {
			return usagef("--out is required")
		}
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		start := time.Now()
		stderr := c.ErrOrStderr()
		files, err := figures.WriteAll(*out, func(name string) {
			fmt.Fprintf(stderr, "  %-40s %5.1fs\n", name, time.Since(start).Seconds())
		})
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c.OutOrStdout(), object{{"files", files}, {"seconds", time.Since(start).Seconds()}})
		}
		for _, f := range files {
			fmt.Fprintln(c.OutOrStdout(), f)
		}
		return nil
	}
	return c
}

const figuresLong = `Writes the model figures of the papers, computed from ckpt's own models, as
PNG and SVG files into DIR, with an index (figures.md) that states every
figure's parameters: Oldfield et al. 2007, Figs. 2, 3, 4, 7, 8, 9, 10; Sato et al. 2012, Figs. 13, 14, 15;
Fialho et al. 2011, Fig. 4. Sato et al. 2012, Fig. 13 and Fialho et al. 2011, Fig. 4 also show seeded simulations (package
sim) of what the models describe. Progress goes to stderr.`
