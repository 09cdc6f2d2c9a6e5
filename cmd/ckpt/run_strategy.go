package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/inject"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// strategyFlag reads --strategy: whether the job is uncoordinated.
func strategyFlag(v string) (bool, error) {
	switch v {
	case jobenv.StrategyCoordinated:
		return false, nil
	case jobenv.StrategyUncoordinated:
		return true, nil
	}
	return false, usagef("--strategy %q: want %s or %s", v, jobenv.StrategyCoordinated, jobenv.StrategyUncoordinated)
}

// checkUncoordinated refuses what the uncoordinated strategy does not
// offer (a usage error, before anything starts).
func (s runSpec) checkUncoordinated() error {
	switch {
	case s.tree:
		// The coordinator lets a lost rank rejoin alone only without
		// relays (coord.Config.Uncoordinated).
		return usagef("--tree: not with --strategy %s (a rank recovering alone rejoins the coordinator itself, not its node's sub-coordinator)", jobenv.StrategyUncoordinated)
	case s.inject != nil && s.inject.Kind == inject.Hang:
		return usagef("--inject-kind hang: not with --strategy %s yet (a hung rank would be vacated by the coordinator but never restarted)", jobenv.StrategyUncoordinated)
	case s.stagingServers > 0:
		return usagef("--staging-servers: not with --strategy %s (a rank's own checkpoints stay in the caches: nothing is flushed)", jobenv.StrategyUncoordinated)
	case s.shared != "":
		return usagef("--shared: not with --strategy %s (a rank's own checkpoints stay in the caches: nothing is flushed)", jobenv.StrategyUncoordinated)
	}
	return nil
}

// uncoordinatedTimeLimit refuses --time-limit under the uncoordinated
// strategy and warns of an allocation's end: a halt reaches the ranks
// through the collective decision rounds, which the strategy does without,
// so the job would not checkpoint and halt before the end.
func (s runSpec) uncoordinatedTimeLimit(warn io.Writer) error {
	if !s.uncoordinated || s.timeLimit.Deadline.IsZero() {
		return nil
	}
	if s.timeLimit.From == "--time-limit" {
		return usagef("--time-limit: not with --strategy %s yet (a halt reaches the ranks through the collective decisions the strategy does without)", jobenv.StrategyUncoordinated)
	}
	fmt.Fprintf(warn, "ckpt run: warning: --strategy %s does not halt before the allocation's end (%s, %s): the ranks' last own checkpoints are what a next allocation has\n",
		jobenv.StrategyUncoordinated, s.timeLimit.From, s.timeLimit.Deadline.Format(time.RFC3339))
	return nil
}

// withFialho adds, for an uncoordinated run with injected failures (mtti
// > 0), Fialho et al. 2011 eq. 10's model fed with what the run measured
// (demo.CompareFialho) at the interval the ranks' policy interval gave
// them; ckpt run --json reports it as model_efficiency.
func (p prediction) withFialho(res runResult, ranks int, mtti float64, interval policy.Policy) prediction {
	if res.Strategy == jobenv.StrategyUncoordinated && mtti > 0 {
		f := demo.CompareFialho(res.MsgLog, ranks, res.RanksRecoveredAlone, res.Phi, res.Elapsed.Seconds(), mtti, interval)
		p.fialho = &f
	}
	return p
}

// modelEfficiency is the run's model: eq. 10 for an uncoordinated run
// (withFialho), else Daly's; NaN without.
func (p prediction) modelEfficiency() float64 {
	if p.fialho != nil {
		return p.fialho.Efficiency
	}
	return p.efficiency
}

// fialhoNote is an uncoordinated run's dependency factor and, with
// failures injected, eq. 10's model.
func fialhoNote(r runResult, p prediction) string {
	phi := "φ not measured"
	if r.Phi > 0 {
		phi = fmt.Sprintf("φ = %.4g (Fialho et al. 2011 eq. 12, from who exchanged messages with whom)", r.Phi)
	}
	if p.fialho == nil || math.IsNaN(p.fialho.Efficiency) {
		return phi
	}
	f := p.fialho
	return fmt.Sprintf("%s; eq. 10 predicts %.1f%% efficiency (t_c = %s, t_l = %s, Δ_lp = %s a window, Δ_lr = %s a recovery, α = %gs, σ = %s)",
		phi, 100*f.Efficiency, sec(f.Cost), sec(f.Load), sec(f.LogProtect), sec(f.LogReplay), f.MTTI, sec(f.Interval))
}

// phiNum is φ for --json: null when it was not measured (0: eq. 12's φ
// lies in (0, 1], and 0 would read as "nobody waits").
func phiNum(phi float64) any {
	if !(phi > 0) {
		return nil
	}
	return num(phi)
}
