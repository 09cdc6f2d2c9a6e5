package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/examples/systems"
	"github.com/ckpt/ckpt/internal/plan"
	"github.com/ckpt/ckpt/internal/units"
)

func newPlanCmd() *cobra.Command {
	c := leaf("plan [--system FILE|NAME] [--target-efficiency F]", "Recommend levels, redundancy, interval and flush mode for a described system", planHelp(), planExample)
	fs := c.Flags()
	f := &planFlags{system: fs.String("system", systems.Default, "system file (YAML) or built-in example name"),
		targetEff: numberFlag(fs, "target-efficiency", "find the shared-tier bandwidth needed for this efficiency, in (0, 1)"),
		af:        addAlphaFlags(fs),
		all:       fs.Bool("all", false, "list every alternative (default: the best failure domain of each scheme, level set and flush mode)")}
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// planFlags are the flags of the command newPlanCmd builds.
type planFlags struct {
	system      *string
	targetEff   *quantity
	af          alphaFlags
	all, asJSON *bool
}

func (f *planFlags) run(c *cobra.Command) error {
	system, targetEff, af, all, asJSON := f.system, f.targetEff, f.af, f.all, f.asJSON
	text, source, err := readSystem(*system)
	if err != nil {
		return err
	}
	sys, err := plan.Load(bytes.NewReader(text))
	if err != nil {
		return usagef("--system %s: %v", source, err)
	}
	if measured, ok, err := af.load(); err != nil {
		return err
	} else if ok {
		if sys.Staging == nil {
			return usagef("--alpha-from: the system %s has no staging servers (a staging: section) for α to apply to", source)
		}
		sys.Staging.Alpha = measured.Alpha
		if !*asJSON {
			fmt.Fprintln(c.ErrOrStderr(), "ckpt plan: "+measured.String())
		}
	}
	opt := plan.Options{}
	if targetEff.set {
		if !(targetEff.v > 0 && targetEff.v < 1) {
			return usagef("--target-efficiency: must lie in (0, 1) (got %g)", targetEff.v)
		}
		opt.TargetEfficiency = targetEff.v
	}
	rep, err := plan.Plan(sys, opt)
	if err != nil {
		return modelErr(err)
	}
	if *asJSON {
		return writeJSON(c.OutOrStdout(), planJSON(rep, source))
	}
	return printPlan(c.OutOrStdout(), rep, source, *all)
}

// planHelp is the help of 'ckpt plan': planLong and the built-in systems.
func planHelp() string {
	return planLong + strings.Join(systems.Names(), ", ") + `
(default ` + systems.Default + `). docs/PLANNING.md documents the file format; the examples are in
examples/systems/.`
}

const planLong = `Reads a system description (nodes, checkpoint bytes per node, node-local and
shared-tier bandwidths, optional staging servers, failure categories with
their rates and the nodes each takes down) and compares the ways to
checkpoint it: the shared tier alone; each node-local redundancy scheme
(partner, xor:S, rs:K+M) with its sets spread over each failure domain the
system has, backed by the shared tier and flushed blocking or, with staging
servers, non-blocking. For each it optimises the interval and the number of
node-local checkpoints per shared-tier checkpoint with the multi-level Markov
model, and prints the expected efficiency side by side, best first, and a
recommendation.

--target-efficiency F answers "what shared-tier bandwidth do I need" (Sato et al. 2012
Fig. 15) for the recommended node-local configuration, blocking and
non-blocking.

--system takes a YAML file or the name of a built-in example: `

const planExample = `  ckpt plan                                  # the built-in TSUBAME2.0 example
  ckpt plan --system my-cluster.yaml --target-efficiency 0.9
  ckpt plan --system red-storm --json`

// readSystem reads a system file, or a built-in example by name.
func readSystem(name string) ([]byte, string, error) {
	text, err := os.ReadFile(name)
	if err == nil {
		return text, name, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if b, ok := systems.Lookup(strings.TrimSuffix(name, ".yaml")); ok {
			return b, "built-in " + strings.TrimSuffix(name, ".yaml"), nil
		}
		return nil, "", usagef("--system: no file %q and no built-in example of that name (built-in: %s)", name, strings.Join(systems.Names(), ", "))
	}
	return nil, "", usagef("--system: %v", err)
}

func alternativeJSON(a *plan.Alternative) object {
	var levels []object
	for _, l := range a.Levels {
		levels = append(levels, object{
			{"name", l.Name}, {"rate", num(l.Rate)}, {"cost_seconds", num(l.Cost)},
			{"restart_seconds", num(l.Restart)}, {"categories", l.Categories},
		})
	}
	o := object{{"name", a.Name}, {"levels", levels}}
	if a.Scheme != nil {
		o = append(o, kv{"redundancy", a.Scheme.String()}, kv{"set_size", a.Scheme.SetSize()})
		if a.Scheme.Parity > 0 {
			o = append(o, kv{"failure_domain", a.Domain.Name}, kv{"domain_nodes", a.Domain.Nodes}, kv{"domains", a.Domain.Count})
		}
	}
	mode := "blocking"
	if a.NonBlocking {
		mode = "nonblocking"
	}
	o = append(o, kv{"flush", mode})
	if a.NonBlocking {
		o = append(o, kv{"flush_latency_seconds", num(a.FlushLatency)}, kv{"alpha", num(a.Alpha)})
	}
	if a.Err != nil {
		return append(o, kv{"error", a.Err.Error()})
	}
	counts := a.Result.Counts
	if counts == nil {
		counts = []int{}
	}
	o = append(o,
		kv{"efficiency", num(a.Result.Efficiency)},
		kv{"interval_seconds", num(a.Result.Interval)},
		kv{"counts", counts},
		kv{"expected_seconds", num(a.Result.PeriodSeconds)},
		kv{"shared_unused", a.SharedUnused},
	)
	if a.NonBlocking {
		o = append(o, kv{"incomplete_segments", a.Result.Incomplete})
	}
	return o
}

func planJSON(rep plan.Report, source string) object {
	s := rep.System
	var failures []object
	for _, f := range s.Failures {
		failures = append(failures, object{{"name", f.Name}, {"nodes", f.Nodes}, {"rate", num(f.Rate)}})
	}
	var alts []object
	for i := range rep.Alternatives {
		alts = append(alts, alternativeJSON(&rep.Alternatives[i]))
	}
	o := object{
		{"system", s.Name},
		{"source", source},
		{"nodes", s.Nodes},
		{"checkpoint_bytes", num(s.TotalBytes())},
		{"failures", failures},
		{"recommended", alternativeJSON(rep.Recommended)},
		{"alternatives", alts},
		{"warnings", append([]string{}, rep.Warnings...)},
	}
	if t := rep.Target; t != nil {
		o = append(o, kv{"target", object{
			{"efficiency", t.Efficiency},
			{"required_shared_bandwidth_blocking", num(t.Blocking.Bandwidth)},
			{"required_shared_bandwidth_nonblocking", num(t.NonBlocking.Bandwidth)},
			{"blocking_note", t.Blocking.Note},
			{"nonblocking_note", t.NonBlocking.Note},
			{"alpha", t.Alpha},
			{"redundancy", schemeName(t.Scheme)},
		}})
	}
	return o
}

func printPlan(w io.Writer, rep plan.Report, source string, all bool) error {
	s := rep.System
	fmt.Fprintf(w, "System: %s (%s)\n", s.Name, source)
	fmt.Fprintf(w, "  %d nodes × %s = %s per checkpoint; shared tier %s write, %s read",
		s.Nodes, units.FormatSize(s.BytesPerNode), units.FormatSize(s.TotalBytes()),
		units.FormatBandwidth(s.Shared.WriteBW), units.FormatBandwidth(s.Shared.ReadBW))
	if s.Staging != nil {
		fmt.Fprintf(w, "; staging %s (α = %g)", units.FormatBandwidth(s.Staging.Throughput), s.Staging.Alpha)
	}
	fmt.Fprintf(w, "\n  failures: total rate %s (MTTI %s)\n", units.FormatRate(s.TotalRate()), units.FormatDuration(1/s.TotalRate()))
	t := newTable(w)
	t.row("    category", "nodes", "rate", "MTBF")
	for _, f := range s.Failures {
		nodes := fmt.Sprint(f.Nodes)
		if f.Nodes == 0 {
			nodes = "0 (process)"
		}
		t.row("    "+f.Name, nodes, units.FormatRate(f.Rate), units.FormatDuration(1/f.Rate))
	}
	t.flush()

	fmt.Fprintln(w, "\nAlternatives, best first (efficiency = ideal time / expected time; interval and counts optimised):")
	t = newTable(w)
	t.row("  #", "alternative", "efficiency", "interval", "counts", "L1 cost", "shared cost")
	// By default one row per scheme, levels and flush mode: its best failure
	// domain. --all lists every domain too.
	shown, hidden := rep.Shown(all)
	for _, i := range shown {
		a := &rep.Alternatives[i]
		mark := "  "
		if a == rep.Recommended {
			mark = "* "
		}
		if a.Err != nil {
			t.row(fmt.Sprintf("%s%d", mark, i+1), a.Name, "error: "+a.Err.Error())
			continue
		}
		perShared := "-"
		if len(a.Result.Counts) > 0 {
			perShared = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(a.Result.Counts)), ","), "[]")
		}
		l1, sh := "-", "-"
		if a.Scheme != nil {
			l1 = units.FormatDuration(a.Levels[0].Cost)
		}
		if !a.SharedUnused {
			last := a.Levels[len(a.Levels)-1]
			sh = units.FormatDuration(last.Cost)
			if a.NonBlocking {
				sh = units.FormatDuration(a.FlushLatency) + " bg"
			}
		}
		t.row(fmt.Sprintf("%s%d", mark, i+1), a.Name, fmt.Sprintf("%.4f", a.Result.Efficiency),
			units.FormatDuration(a.Result.Interval), perShared, l1, sh)
	}
	t.flush()
	if hidden > 0 {
		fmt.Fprintf(w, "  (%d more over other failure domains; --all lists them)\n", hidden)
	}

	r := rep.Recommended
	for _, warning := range rep.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warning)
	}
	fmt.Fprintf(w, "\nRecommended: %s\n", r.Name)
	t = newTable(w)
	if r.Scheme != nil {
		if r.Scheme.Parity > 0 {
			t.row("  redundancy", fmt.Sprintf("%s: sets of %d nodes, each member %s (%d available)",
				r.Scheme, r.Scheme.SetSize(), domainName(r.Domain), r.Domain.Count))
		} else {
			t.row("  redundancy", r.Scheme.String())
		}
	}
	t.row("  checkpoint every", fmt.Sprintf("%s of computation", units.FormatDuration(r.Result.Interval)))
	for i, l := range r.Levels {
		if l.Name == "shared" {
			how := "blocking flush"
			if r.NonBlocking {
				how = fmt.Sprintf("non-blocking flush through the staging servers (%s in the background)", units.FormatDuration(r.FlushLatency))
			}
			every := "every checkpoint"
			if i > 0 {
				every = fmt.Sprintf("every %s checkpoint", ordinal(r.Result.Segments()))
			}
			t.row("  shared tier", fmt.Sprintf("%s, %s; recovers %s", every, how, strings.Join(l.Categories, ", ")))
			continue
		}
		t.row("  "+l.Name, fmt.Sprintf("cost %s, restart %s; recovers %s", units.FormatDuration(l.Cost), units.FormatDuration(l.Restart), strings.Join(l.Categories, ", ")))
	}
	if r.SharedUnused {
		t.row("  shared tier", "no failure category needs it for recovery; flush for durability at the end of the job")
	}
	t.row("  expected efficiency", fmt.Sprintf("%.4f", r.Result.Efficiency))
	t.flush()

	if tg := rep.Target; tg != nil {
		fmt.Fprintf(w, "\nShared-tier bandwidth for efficiency %g with the recommended node-local configuration (%s):\n", tg.Efficiency, schemeName(tg.Scheme))
		t = newTable(w)
		if math.IsNaN(tg.Blocking.Bandwidth) && math.IsNaN(tg.NonBlocking.Bandwidth) && tg.Blocking.Note == tg.NonBlocking.Note {
			t.row("  ", tg.Blocking.Note)
		} else {
			t.row("  blocking flush", answer(tg.Blocking))
			nb := answer(tg.NonBlocking)
			if !math.IsNaN(tg.NonBlocking.Bandwidth) {
				nb += fmt.Sprintf(" (staging saturating the shared tier, α = %g)", tg.Alpha)
			}
			t.row("  non-blocking flush", nb)
		}
		t.flush()
	}
	return nil
}

func domainName(d plan.Domain) string {
	if d.Nodes == 1 {
		return "on a different node"
	}
	return fmt.Sprintf("in a different %s domain (%d nodes each)", d.Name, d.Nodes)
}

// ordinal spells 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// answer prints a bandwidth with its qualification, or why there is none.
func answer(a plan.Answer) string {
	switch {
	case math.IsNaN(a.Bandwidth):
		return a.Note
	case a.Note != "":
		return units.FormatBandwidth(a.Bandwidth) + " — " + a.Note
	}
	return units.FormatBandwidth(a.Bandwidth)
}

func schemeName(s *plan.Scheme) string {
	if s == nil {
		return "none: shared tier only"
	}
	return s.String()
}
