// Package figures regenerates the model figures of the papers ckpt
// implements from the models in package model, and writes each one as a PNG
// and an SVG with gonum/plot.
//
// Every figure is a Figure: a file stem (Name), a title, a caption that
// states every parameter, and a Build function that computes the data and
// returns the plot. The data are computed by pure "series" functions (for
// example oldfieldSeries or bandwidthSeries) that the tests check without
// rendering anything; the Build functions only turn series into plots. Each
// plot repeats its parameters under its title, so a figure copied out of the
// index still says what it shows.
//
// The figures, by paper (see the captions in All for the details):
//
//   - 000 (Oldfield et al., MSST 2007), Figs 2, 3, 4, 7, 8, 9 and 10: Daly's
//     optimal interval, checkpoint throughput and checkpoint percentage
//     against the number of processors for the four systems of Table 1, for
//     a parallel file system, lightweight storage (LWFS) and LWFS with an
//     overlay-network buffer.
//   - 001 (Sato et al., SC12), Figs 13, 14 and 15: optimised efficiency of
//     blocking and non-blocking two-level checkpointing on TSUBAME2.0
//     (SPEC-markov §8), its dependence on the overhead factor α, and the PFS
//     bandwidth needed for a target efficiency. Fig 13's bars carry the
//     efficiency package sim measures for their optimal schedules.
//   - 003 (Fialho et al.), Fig 4: predicted run time of a 500-day
//     application against the checkpoint interval for four models, with
//     simulated points.
//
// WriteAll renders every figure into a directory together with an index,
// figures.md. Most figures take milliseconds; the Sato figures run the
// Markov optimiser many times and are marked Slow (Fig 15 needs a few
// hundred optimisations and spreads them over runtime.NumCPU() goroutines).
package figures
