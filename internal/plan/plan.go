package plan

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/model"
)

// Level is one checkpoint level of an alternative, with the failure
// categories it is the lowest level able to recover from.
type Level struct {
	Name       string
	Rate       float64 // λ_i: failures of exactly this level, per second
	Cost       float64 // c_i, seconds the application blocks
	Restart    float64 // r_i, seconds
	Categories []string
}

// Domain is the failure domain redundancy sets are spread over: each member
// of a set lives in a different domain, so losing one domain costs each set
// at most one member.
type Domain struct {
	Nodes int    // nodes per domain
	Count int    // domains in the system
	Name  string // the failure category of that size, or "node"
}

// Alternative is one way to checkpoint the system, with its optimised schedule.
type Alternative struct {
	Name         string
	Levels       []Level
	Scheme       *Scheme // node-local redundancy; nil for shared only
	Domain       Domain
	NonBlocking  bool
	FlushLatency float64 // ℓ_2, non-blocking only
	Alpha        float64 // α, non-blocking only
	Result       model.MultilevelResult
	Err          error // set when the alternative cannot run (reported, not fatal)
	// SharedUnused is true when no failure category needs the shared tier:
	// the model then never flushes (the tier still serves the job's end).
	SharedUnused bool
}

// Report is the outcome of planning a system.
type Report struct {
	System       System
	Alternatives []Alternative // best first; failed ones last
	Recommended  *Alternative
	Target       *Target
	// Warnings point at inputs the results suggest are wrong.
	Warnings []string
}

// Target answers "what shared-tier bandwidth do I need for this efficiency"
// (001 Fig. 15) for the recommended node-local configuration.
type Target struct {
	Efficiency float64
	Scheme     *Scheme // the recommended node-local scheme; nil for shared only
	Domain     Domain
	Alpha      float64 // α used for the non-blocking answer
	Blocking   Answer
	// NonBlocking assumes staging servers that saturate the shared tier.
	NonBlocking Answer
}

// Answer is the bandwidth one flush mode needs. Bandwidth is NaN when there
// is no answer; Note then says why, and may also qualify a number.
type Answer struct {
	Bandwidth float64 // bytes/s written to the shared tier
	Note      string
}

// The bandwidth search range of a target, bytes/s.
const targetLo, targetHi = 1.0, 1e15

// Options tune the planner.
type Options struct {
	TargetEfficiency float64 // 0: do not solve for bandwidth
	Workers          int     // concurrent optimisations; 0: one per CPU
}

// tie is the efficiency difference below which alternatives count as equal
// and the simpler one is recommended.
const tie = 1e-3

// Plan enumerates the alternatives for a system, optimises each (interval
// and counts, SPEC-markov §6) and recommends one.
func Plan(s System, opt Options) (Report, error) {
	alts := Alternatives(s)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	parallel(len(alts), workers, func(i int) { alts[i].optimize() })

	sort.SliceStable(alts, func(i, j int) bool {
		a, b := alts[i], alts[j]
		if (a.Err == nil) != (b.Err == nil) {
			return a.Err == nil
		}
		return a.Result.Efficiency > b.Result.Efficiency
	})
	rep := Report{System: s, Alternatives: alts}
	rep.Recommended = recommend(alts)
	if rep.Recommended == nil {
		return rep, fmt.Errorf("no alternative could be evaluated: %v", alts[0].Err)
	}
	if e := rep.Recommended.Result.Efficiency; e < 0.01 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"even the best alternative makes progress only %.2g of the time: failures (MTTI %.3g s over the whole system) come faster than checkpoints of these costs can protect against; check the failure rates and bandwidths",
			e, 1/s.TotalRate()))
	}
	if opt.TargetEfficiency != 0 {
		if !(opt.TargetEfficiency > 0 && opt.TargetEfficiency < 1) {
			return rep, &model.ParamError{Param: "target-efficiency", Value: opt.TargetEfficiency, Reason: "must lie in (0, 1)"}
		}
		rep.Target = target(s, rep.Recommended, opt.TargetEfficiency)
	}
	return rep, nil
}

// recommend picks the best alternative; among those within tie of it, the
// simplest: fewer levels, then blocking, then sets spread over larger
// domains, then smaller sets (faster rebuilds, fewer members exposed to a
// second failure — which the model does not count).
func recommend(alts []Alternative) *Alternative {
	var best *Alternative
	for i := range alts {
		if alts[i].Err == nil && (best == nil || alts[i].Result.Efficiency > best.Result.Efficiency) {
			best = &alts[i]
		}
	}
	if best == nil {
		return nil
	}
	top := best.Result.Efficiency
	for i := range alts {
		a := &alts[i]
		if a.Err == nil && a.Result.Efficiency >= top-tie && simpler(a, best) {
			best = a
		}
	}
	return best
}

func simpler(a, b *Alternative) bool {
	if len(a.Levels) != len(b.Levels) {
		return len(a.Levels) < len(b.Levels)
	}
	if (a.Scheme == nil) != (b.Scheme == nil) {
		return a.Scheme == nil // the shared tier alone has nothing to set up
	}
	if a.NonBlocking != b.NonBlocking {
		return !a.NonBlocking
	}
	if a.Domain.Nodes != b.Domain.Nodes {
		return a.Domain.Nodes > b.Domain.Nodes
	}
	if a.Scheme != nil && b.Scheme != nil && a.Scheme.SetSize() != b.Scheme.SetSize() {
		return a.Scheme.SetSize() < b.Scheme.SetSize()
	}
	return false
}

// domains lists the failure domains sets can be spread over: single nodes,
// and every failure category's size between one node and the whole system.
// Categories are assumed nested (node ⊂ power supply ⊂ switch ⊂ rack), as in
// 001 Table I, so a failure of a category no larger than the domain takes
// out at most one domain.
func domains(s System) []Domain {
	out := []Domain{{Nodes: 1, Count: s.Nodes, Name: "node"}}
	seen := map[int]bool{1: true}
	cats := append([]Failure(nil), s.Failures...)
	sort.SliceStable(cats, func(i, j int) bool { return cats[i].Nodes < cats[j].Nodes })
	for _, f := range cats {
		if f.Nodes <= 1 || f.Nodes >= s.Nodes || seen[f.Nodes] {
			continue
		}
		seen[f.Nodes] = true
		out = append(out, Domain{Nodes: f.Nodes, Count: s.Nodes / f.Nodes, Name: f.Name})
	}
	return out
}

// Costs of the levels, from bandwidths or as given.
func (s System) localCost(sc Scheme) (cost, restart float64) {
	if s.NodeLocal.Cost > 0 {
		return s.NodeLocal.Cost, s.NodeLocal.Restart
	}
	// Writing stores data and parity; a restart reads them back (or a
	// rebuild gathers as much from the set).
	b := s.BytesPerNode * sc.Overhead()
	return b / s.NodeLocal.WriteBW, b / s.NodeLocal.ReadBW
}

func (s System) sharedCost() (cost, restart float64) {
	return s.TotalBytes() / s.Shared.WriteBW, s.TotalBytes() / s.Shared.ReadBW
}

// Alternatives enumerates the ways to checkpoint the system: the shared tier
// alone; each node-local scheme, spread over each feasible failure domain,
// with the shared tier behind it, flushed blocking or (with staging servers)
// non-blocking; and, when process failures occur, a three-level variant
// with an unprotected node-local level below the protected one.
func Alternatives(s System) []Alternative {
	var alts []Alternative
	cs, rs := s.sharedCost()
	var names []string
	for _, f := range s.Failures {
		names = append(names, f.Name)
	}
	alts = append(alts, Alternative{
		Name:   "shared tier only",
		Levels: []Level{{Name: "shared", Rate: s.TotalRate(), Cost: cs, Restart: rs, Categories: names}},
	})
	processRate, processNames := 0.0, []string(nil)
	for _, f := range s.Failures {
		if f.Nodes == 0 {
			processRate += f.Rate
			processNames = append(processNames, f.Name)
		}
	}
	for i := range s.NodeLocal.Schemes {
		sc := s.NodeLocal.Schemes[i]
		c1, r1 := s.localCost(sc)
		doms := domains(s)
		if sc.Parity == 0 {
			doms = []Domain{{Nodes: 0, Count: s.Nodes, Name: "none"}}
		}
		for _, d := range doms {
			if d.Count < sc.SetSize() {
				continue // not enough distinct domains for one set
			}
			local := Level{Name: "cache " + sc.String()}
			shared := Level{Name: "shared", Cost: cs, Restart: rs}
			for _, f := range s.Failures {
				if f.Nodes == 0 || (sc.Parity > 0 && f.Nodes <= d.Nodes) {
					local.Rate += f.Rate
					local.Categories = append(local.Categories, f.Name)
				} else {
					shared.Rate += f.Rate
					shared.Categories = append(shared.Categories, f.Name)
				}
			}
			if local.Rate == 0 {
				continue // the cache would never be used: same as shared only
			}
			local.Cost, local.Restart = c1, r1
			where := ""
			if sc.Parity > 0 {
				where = " across " + plural(d)
			}
			if shared.Rate == 0 {
				alts = append(alts, Alternative{
					Name: "cache " + sc.String() + where + " only", Scheme: &sc, Domain: d,
					Levels: []Level{local}, SharedUnused: true,
				})
				continue
			}
			alts = append(alts, Alternative{
				Name: "cache " + sc.String() + where + " + shared, blocking", Scheme: &sc, Domain: d,
				Levels: []Level{local, shared},
			})
			if s.Staging != nil {
				alts = append(alts, Alternative{
					Name: "cache " + sc.String() + where + " + shared, non-blocking", Scheme: &sc, Domain: d,
					Levels: []Level{local, shared}, NonBlocking: true,
					FlushLatency: s.TotalBytes() / math.Min(s.Staging.Throughput, s.Shared.WriteBW),
					Alpha:        s.Staging.Alpha,
				})
			}
			// Three levels: an unprotected cache level for process failures
			// below the protected one. Needs bandwidths to cost it.
			if processRate > 0 && sc.Parity > 0 && local.Rate > processRate && s.NodeLocal.WriteBW > 0 {
				single := Level{Name: "cache single", Rate: processRate, Categories: processNames,
					Cost: s.BytesPerNode / s.NodeLocal.WriteBW, Restart: s.BytesPerNode / s.NodeLocal.ReadBW}
				protected := local
				protected.Rate -= processRate
				protected.Categories = without(local.Categories, processNames)
				alts = append(alts, Alternative{
					Name: "cache single + cache " + sc.String() + where + " + shared, blocking", Scheme: &sc, Domain: d,
					Levels: []Level{single, protected, shared},
				})
			}
		}
	}
	return alts
}

func plural(d Domain) string {
	if d.Nodes == 1 {
		return "nodes"
	}
	return fmt.Sprintf("%s domains (%d nodes each)", d.Name, d.Nodes)
}

func without(list, drop []string) []string {
	var out []string
	for _, x := range list {
		keep := true
		for _, d := range drop {
			if x == d {
				keep = false
			}
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

// Model returns the model levels of an alternative.
func (a *Alternative) Model() model.Levels {
	var lv model.Levels
	for _, l := range a.Levels {
		lv.Rates = append(lv.Rates, l.Rate)
		lv.Cost = append(lv.Cost, l.Cost)
		lv.Restart = append(lv.Restart, l.Restart)
	}
	return lv
}

func (a *Alternative) optimize() {
	lv := a.Model()
	if a.NonBlocking {
		// The blocking part of a flushed checkpoint is the level-1 write (SPEC §5).
		lv.Cost[1] = lv.Cost[0]
		a.Result, a.Err = model.NonBlocking{Levels: lv, FlushLatency: a.FlushLatency, Alpha: a.Alpha}.Optimize()
		return
	}
	a.Result, a.Err = model.OptimizeBlocking(lv, model.BlockingOptions{})
}

// target solves for the smallest shared-tier bandwidth that reaches the
// target efficiency with the recommended node-local configuration, blocking
// and non-blocking (staging servers taken to saturate the shared tier, as in
// 001 Fig. 15). The read bandwidth scales with the write bandwidth in the
// system's own ratio.
func target(s System, rec *Alternative, eff float64) *Target {
	none := Answer{Bandwidth: math.NaN()}
	t := &Target{Efficiency: eff, Scheme: rec.Scheme, Domain: rec.Domain, Blocking: none, NonBlocking: none}
	if s.Staging != nil {
		t.Alpha = s.Staging.Alpha
	}
	if rec.SharedUnused {
		note := fmt.Sprintf("no failure category needs the shared tier, so its bandwidth does not matter; the node-local level alone reaches %.4f", rec.Result.Efficiency)
		if rec.Result.Efficiency < eff {
			note += ", below the target"
		}
		t.Blocking.Note, t.NonBlocking.Note = note, note
		return t
	}
	readRatio := s.Shared.ReadBW / s.Shared.WriteBW
	sharedAt := func(bw float64) (cost, restart float64) {
		return s.TotalBytes() / bw, s.TotalBytes() / (bw * readRatio)
	}
	last := len(rec.Levels) - 1 // the shared tier

	blocking := func(bw float64) float64 {
		lv := rec.Model()
		lv.Cost[last], lv.Restart[last] = sharedAt(bw)
		r, err := model.OptimizeBlocking(lv, model.BlockingOptions{})
		if err != nil {
			return 0
		}
		return r.Efficiency
	}
	t.Blocking = solve(blocking, eff)

	if last == 0 {
		t.NonBlocking.Note = "not applicable: the recommendation has no node-local level to flush from"
		return t
	}
	// Two levels: every failure below the shared tier is recovered by the
	// protected node-local level (with three levels, the unprotected one is
	// folded into it at its cost: the non-blocking model has two levels).
	local := rec.Levels[last-1]
	localRate := 0.0
	for _, l := range rec.Levels[:last] {
		localRate += l.Rate
	}
	nonBlocking := func(bw float64) float64 {
		c2, r2 := sharedAt(bw)
		lv := model.Levels{
			Rates:   []float64{localRate, rec.Levels[last].Rate},
			Cost:    []float64{local.Cost, local.Cost},
			Restart: []float64{local.Restart, r2},
		}
		r, err := model.NonBlocking{Levels: lv, FlushLatency: c2, Alpha: t.Alpha}.Optimize()
		if err != nil {
			return 0
		}
		return r.Efficiency
	}
	t.NonBlocking = solve(nonBlocking, eff)
	if s.Staging == nil {
		t.NonBlocking.Note = strings.TrimPrefix(t.NonBlocking.Note+"; ", "; ") + "hypothetical: the system has no staging servers (α = 0 assumed)"
	}
	return t
}

// solve finds the smallest bandwidth whose optimised efficiency reaches eff.
func solve(efficiency func(bw float64) float64, eff float64) Answer {
	bw, ok := model.SmallestReaching(efficiency, eff, targetLo, targetHi)
	switch {
	case !ok:
		return Answer{Bandwidth: math.NaN(), Note: fmt.Sprintf("out of reach with any shared-tier bandwidth up to %g B/s: the node-local levels alone cost too much", targetHi)}
	case bw == targetLo:
		return Answer{Bandwidth: bw, Note: "any bandwidth reaches the target"}
	}
	return Answer{Bandwidth: bw}
}

// parallel runs f(0..n-1) on at most workers goroutines.
func parallel(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
