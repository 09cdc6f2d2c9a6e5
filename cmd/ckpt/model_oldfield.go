package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

func newOldfieldCmd() *cobra.Command {
	c := leaf("oldfield (--system NAME | --bytes-per-proc B --link-bw R --bisection-bw R --storage-bw R --mtti D) --procs N [flags]", "Checkpoint overhead from link, bisection and storage bandwidth (Oldfield et al. 2007, §3.1, §4)", oldfieldLong, oldfieldExample)
	fs := c.Flags()
	f := &oldfieldFlags{}
	f.system = fs.String("system", "", "a system of Oldfield et al. 2007, Table 1: red-storm, bluegene-l, jaguar or petaflop")
	f.procs = fs.Int("procs", 0, "number of processes n (required, ≥ 1)")
	f.storage = fs.String("storage", "pfs", "pfs (start-up 0) or lwfs (start-up n/60000 s)")
	f.startup = durationFlag(fs, "startup", "start-up cost α_c, overriding the storage's default (≥ 0)")
	f.bytesPerProc = sizeFlag(fs, "bytes-per-proc", "checkpoint bytes d per process")
	f.linkBW = bandwidthFlag(fs, "link-bw", "one-way bandwidth β_L of one process's link (times n)")
	f.bisectionBW = bandwidthFlag(fs, "bisection-bw", "bisection bandwidth β_n of the network")
	f.storageBW = bandwidthFlag(fs, "storage-bw", "aggregate storage bandwidth β_s")
	f.mtti = durationFlag(fs, "mtti", "MTTI M of the whole job")
	f.memPerProc = sizeFlag(fs, "mem-per-proc", "memory of one compute processor, for --overlay-mem-factor with explicit parameters")
	f.overlayProcs = fs.Int("overlay-procs", 0, "processors in the overlay network N")
	f.overlayFactor = numberFlag(fs, "overlay-mem-factor", "memory of an overlay processor relative to a compute processor F")
	f.overlayBytes = sizeFlag(fs, "overlay-bytes", "memory of the overlay network μ")
	f.asJSON = jsonFlag(c)

	return runs(c, f)
}

// oldfieldFlags are the flags of the command newOldfieldCmd builds.
type oldfieldFlags struct {
	system, storage                                                                                      *string
	procs, overlayProcs                                                                                  *int
	startup, bytesPerProc, linkBW, bisectionBW, storageBW, mtti, memPerProc, overlayFactor, overlayBytes *quantity
	asJSON                                                                                               *bool
}

func (f *oldfieldFlags) run(c *cobra.Command) error {
	if *f.procs < 1 {
		return usagef("--procs: must be a whole number ≥ 1 (got %d)", *f.procs)
	}
	st := model.Storage(*f.storage)
	if st != model.StoragePFS && st != model.StorageLWFS {
		return usagef("--storage: unknown storage %q (use pfs or lwfs)", *f.storage)
	}
	explicit := []req{{"bytes-per-proc", f.bytesPerProc}, {"link-bw", f.linkBW}, {"bisection-bw", f.bisectionBW}, {"storage-bw", f.storageBW}, {"mtti", f.mtti}}
	var in model.OldfieldInput
	title := "explicit parameters"
	if *f.system != "" {
		for _, e := range explicit {
			if e.q.set {
				return usagef("--%s: give --system or the explicit parameters, not both", e.name)
			}
		}
		sys, err := model.LookupMPPSystem(*f.system)
		if err != nil {
			return usagef("--system: %v", err)
		}
		if f.memPerProc.set {
			return usagef("--mem-per-proc: the preset fixes it (%s); give explicit parameters to change it", units.FormatSize(sys.MemPerProc))
		}
		in = sys.Input(*f.procs, st)
		title = sys.Title
	} else {
		if err := require(explicit...); err != nil {
			return usagef("%v (or give --system)", err)
		}
		in = model.OldfieldInput{Procs: *f.procs, BytesPerProc: f.bytesPerProc.v, LinkBW: f.linkBW.v,
			BisectionBW: f.bisectionBW.v, StorageBW: f.storageBW.v, MTTI: f.mtti.v, Startup: st.Startup(*f.procs)}
	}
	if f.startup.set {
		in.Startup = f.startup.v
	}
	switch {
	case f.overlayBytes.set && (*f.overlayProcs != 0 || f.overlayFactor.set):
		return usagef("--overlay-bytes: give it or --overlay-procs with --overlay-mem-factor, not both")
	case f.overlayBytes.set:
		if !(f.overlayBytes.v > 0) {
			return usagef("--overlay-bytes: must be > 0 (got %g)", f.overlayBytes.v)
		}
		in.OverlayBytes = f.overlayBytes.v
	case *f.overlayProcs != 0 || f.overlayFactor.set:
		if *f.overlayProcs < 1 {
			return usagef("--overlay-procs: must be ≥ 1 with --overlay-mem-factor (got %d)", *f.overlayProcs)
		}
		if !f.overlayFactor.set || !(f.overlayFactor.v > 0) {
			return usagef("--overlay-mem-factor: must be given and > 0 with --overlay-procs")
		}
		mem := 2 * in.BytesPerProc // a preset processor's memory (Oldfield et al. 2007: d is half of it)
		if *f.system == "" {
			if !f.memPerProc.set || !(f.memPerProc.v > 0) {
				return usagef("--mem-per-proc: give the memory of one compute processor (> 0) to size the overlay with --overlay-mem-factor, or give --overlay-bytes")
			}
			mem = f.memPerProc.v
		}
		in.OverlayBytes = float64(*f.overlayProcs) * f.overlayFactor.v * mem
	}
	res, err := model.Oldfield(in)
	if err != nil {
		return modelErr(err)
	}
	w := c.OutOrStdout()
	overlay := in.OverlayBytes > 0
	if *f.asJSON {
		o := object{
			{"delta_seconds", num(res.Delta)},
			{"bandwidth_bytes_per_second", num(res.Bandwidth)},
			{"bound", string(res.Bound)},
			{"interval_seconds", num(res.Interval)},
			{"checkpoint_fraction", num(res.CheckpointFraction)},
			{"efficiency", num(res.Efficiency)},
			{"startup_seconds", num(in.Startup)},
			{"mtti_seconds", num(in.MTTI)},
			{"bytes_per_proc", num(in.BytesPerProc)},
		}
		if overlay {
			o = append(o, kv{"k_bytes", num(res.K)}, kv{"interval_lower_bound_seconds", num(res.IntervalLowerBound)},
				kv{"daly_interval_seconds", num(res.DalyInterval)}, kv{"overlay_bytes", num(in.OverlayBytes)})
		}
		return writeJSON(w, o)
	}
	t := newTable(w)
	t.row("system", fmt.Sprintf("%s, %s processes, %s storage", title, strconv.Itoa(in.Procs), st))
	t.row("inputs", fmt.Sprintf("d = %s per process, β_L = %s, β_n = %s, β_s = %s, M = %s, α_c = %s",
		units.FormatSize(in.BytesPerProc), units.FormatBandwidth(in.LinkBW), units.FormatBandwidth(in.BisectionBW),
		units.FormatBandwidth(in.StorageBW), units.FormatDuration(in.MTTI), units.FormatDuration(in.Startup)))
	if overlay {
		t.row("overlay", fmt.Sprintf("μ = %s buffered, k = %s written at network rate", units.FormatSize(in.OverlayBytes), units.FormatSize(res.K)))
	}
	t.row("checkpoint overhead δ", fmt.Sprintf("%s (%s)", units.FormatDuration(res.Delta), sec(res.Delta)))
	t.row("bandwidth", fmt.Sprintf("%s, bound by %s", units.FormatBandwidth(res.Bandwidth), res.Bound))
	t.row("interval τ_opt", fmt.Sprintf("%s (%s)", units.FormatDuration(res.Interval), sec(res.Interval)))
	if overlay {
		t.row("interval lower bound τ_lb", fmt.Sprintf("%s (Daly alone: %s)", units.FormatDuration(res.IntervalLowerBound), units.FormatDuration(res.DalyInterval)))
	}
	t.row("checkpoint fraction", fmt.Sprintf("%s  δ/(τ+δ), failure-free (Oldfield et al. 2007, Fig. 4)", pct(res.CheckpointFraction)))
	t.row("efficiency", fmt.Sprintf("%.4g  T_s/T of Oldfield et al. 2007, eq. 1 with R = 0", res.Efficiency))
	return t.flush()
}

const oldfieldLong = `Evaluates Oldfield et al.'s checkpoint overhead model for n = --procs processes:

  δ = α_c + nd/β,  β = min(nβ_L, β_n, β_s)

and reports which of the three bandwidths bounds it, Daly's optimal interval
(Oldfield et al. 2007, eq. 2), the failure-free checkpoint fraction δ/(τ+δ) (Oldfield et al. 2007, Fig. 4) and the
efficiency T_s/T of Oldfield et al. 2007, eq. 1 with R = 0 — the paper uses each in different
places. --storage lwfs sets the start-up cost α_c = n/60000 s (lightweight
object storage, Oldfield et al. 2007, §4.1); --startup overrides it.

With an overlay network buffer (Oldfield et al. 2007, §4.2, eq. 3–4) of μ bytes the overhead is
α_c + dn/β_N while dn ≤ k, else α_c + k/β_N + (dn − k)/β_s, with
β_N = min(nβ_L, β_n) and k = μ/(1 − β_s/β_N); the interval is
max(τ_opt-D, τ_lb) with τ_lb = (μ/β_s) min(1, nd/k). Give μ directly with
--overlay-bytes, or as --overlay-procs N --overlay-mem-factor F: μ = N × F ×
the memory of one compute processor, which is 2d for the presets (Oldfield et al. 2007
checkpoints half of it) and --mem-per-proc with explicit parameters.

Presets (Oldfield et al. 2007, Table 1, decimal units): red-storm, bluegene-l, jaguar, petaflop;
d = half the memory per processor, M = 5 years / n. --procs may exceed a
preset's size (the paper goes to 128K processors on every system).`

const oldfieldExample = `  ckpt model oldfield --system red-storm --procs 65536
  ckpt model oldfield --system red-storm --procs 4096 --storage lwfs --overlay-procs 1024 --overlay-mem-factor 2
  ckpt model oldfield --procs 1024 --bytes-per-proc 1GB --link-bw 2GB/s --bisection-bw 1TB/s --storage-bw 100GB/s --mtti 12h --json`
