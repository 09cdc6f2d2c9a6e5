package torture

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Attacks is what the attacks of a hostile fault found.
type Attacks struct {
	// Held counts, by kind of listener (coordinator, relay, peer, stage),
	// the attacks the listener held.
	Held map[string]int
	// Cut counts the attacks cut short because their listener's process
	// ended (the job finished, or restarted: that is accounted for as a
	// restart).
	Cut int
	// Failed has one line per attack a listener did not hold, and per
	// listener that kept attackers' connections open after the attacks.
	Failed []string
}

// String is the progress line's account: "coordinator 9, peer 36 held".
func (a Attacks) String() string {
	s := "none held"
	if len(a.Held) > 0 {
		s = Counts(a.Held) + " held"
	}
	if a.Cut > 0 {
		s += fmt.Sprintf(", %d cut short by the end of their listener's process", a.Cut)
	}
	if len(a.Failed) > 0 {
		s += fmt.Sprintf(", %d FAILED", len(a.Failed))
	}
	return s
}

// Attacker is a Job that plays hostile faults: once Inject of a Hostile
// fault returned, Attacks returns what its attacks found.
type Attacker interface {
	Attacks() Attacks
}

// rideOutAttacks accounts for hostile fault f, whose attacks began at at
// and have ended (Inject returns when they have), and reads the job's
// events up to its first checkpoint after they ended. The job rides the
// attacks out if it does not restart meanwhile; its recovery time is to
// its first checkpoint after they began: the job went on under attack. A
// job that finishes meanwhile rode them out too.
func (r *jobRun) rideOutAttacks(ctx context.Context, f Fault, at time.Time) error {
	end := r.cfg.Now()
	r.attacked(f)
	first := true
	return r.await(ctx, f.String(), func(e Event) bool {
		switch {
		case e.Kind == "restored" || e.Kind == "started":
			r.report(r.tally.HostileRestart(f))
			r.restored(&f, at, e, Damage{})
			return true
		case e.Kind == "checkpoint" && !e.At.Before(at) && first:
			first = false
			r.tally.Healed(f, at, e)
			r.say("rode out %s: step %d committed %.2fs after the attacks began", f, e.Step, e.At.Sub(at).Seconds())
		case e.Kind == "done":
			if first {
				r.tally.Healed(f, at, e)
				r.say("rode out %s: the job finished %.2fs after the attacks began", f, e.At.Sub(at).Seconds())
			}
			return true
		}
		if e.Kind == "checkpoint" && !e.At.Before(end) {
			r.since = 0
			return true
		}
		return false
	})
}

// attacked accounts for the attacks of hostile fault f, which the job
// says (a job that is no Attacker tells nothing).
func (r *jobRun) attacked(f Fault) {
	a, ok := r.job.(Attacker)
	if !ok {
		return
	}
	res := a.Attacks()
	for _, p := range r.tally.Attacked(f, res) {
		r.report(p)
	}
	r.say("attacks of %s: %s", f, res)
}

// Counts is "a 2, b 1": m's counts in key order, for the account's
// progress lines and tables.
func Counts[K ~string](m map[K]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[K(k)])
	}
	return strings.Join(parts, ", ")
}

// jobFacts is what the ranks' environment says of the job.
type jobFacts struct {
	token  string
	inc    uint64
	nodes  []string                  // in order of their first rank
	byNode map[string][]int32        // the ranks of each node
	coord  map[netip.AddrPort]string // where the ranks of which node talk to the job
}

// jobOf reads the job from its ranks' environments, by rank.
func jobOf(envs []map[string]string) (jobFacts, error) {
	f := jobFacts{byNode: map[string][]int32{}, coord: map[netip.AddrPort]string{}}
	for r, env := range envs {
		tok, inc := env[jobenv.VarToken], env[jobenv.VarIncarnation]
		node, coord := env[jobenv.VarNode], env[jobenv.VarCoord]
		if tok == "" || node == "" || coord == "" {
			return f, fmt.Errorf("%w: rank %d's environment lacks the job's token, node or coordinator", ErrNothingToHit, r)
		}
		if r == 0 {
			f.token = tok
			n, err := strconv.ParseUint(inc, 10, 64)
			if err != nil {
				return f, fmt.Errorf("%w: rank 0's incarnation %q", ErrNothingToHit, inc)
			}
			f.inc = n
		} else if tok != f.token {
			return f, fmt.Errorf("%w: the ranks have different tokens (a launch in progress)", ErrNothingToHit)
		}
		a, err := netip.ParseAddrPort(coord)
		if err != nil {
			return f, fmt.Errorf("%w: rank %d's coordinator %q: %v", ErrNothingToHit, r, coord, err)
		}
		a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
		if _, ok := f.byNode[node]; !ok {
			f.nodes = append(f.nodes, node)
		}
		f.byNode[node] = append(f.byNode[node], int32(r))
		f.coord[a] = node
	}
	return f, nil
}

// parseEnviron reads a process's environment (/proc/PID/environ: NUL
// separated NAME=value).
func parseEnviron(b []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}
