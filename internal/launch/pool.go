package launch

import (
	"fmt"
	"slices"
	"strings"
)

// Pool decides on which nodes each launch of a job runs, as SCR's
// scr_srun loop does with its spare nodes: a node whose failure was
// detected is left out of the next launch (excluded), and its ranks go to
// a spare node, or, without a spare, to the other nodes if the job's
// redundancy sets still fit on fewer nodes (the job shrinks); if neither
// is possible the node is kept, as a replacement with an empty cache
// (which is what a simulated node's loss is). An excluded node is
// re-admitted, as the last spare, after ReadmitAfter launches ran without
// it (0: never during the run).
//
// It is pure: the launcher tells it what failed (Fail) and that a launch
// started (Launched), and reads the layout of the next launch (Layout).
type Pool struct {
	// layout[r] is rank r's node in the next launch.
	layout []string
	// spares are the free nodes, the first one used first.
	spares []string
	// out are the nodes excluded now; history every exclusion made.
	out     []*Exclusion
	history []*Exclusion
	fits    func(layout []string) error
	readmit int
}

// Exclusion is a node left out of a job's launches, and why.
type Exclusion struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	// Launch is the incarnation of the first launch without the node.
	Launch uint64 `json:"launch"`
	// Readmitted: the node became a spare again (Pool's ReadmitAfter).
	Readmitted bool `json:"readmitted"`
	// launches without the node so far.
	without int
}

// Change is what one failed node changes in the next launch.
type Change struct {
	Node, Reason string
	// Spare is the node that takes the failed node's ranks; "" if none.
	Spare string
	// Shrunk: no spare was left, and the failed node's ranks went to the
	// other nodes (Nodes of them now).
	Shrunk bool
	Nodes  int
	// Kept says why the node was not excluded ("" if it was): no spare,
	// and the other nodes cannot hold the redundancy sets.
	Kept string
}

// Excluded reports whether the node was left out.
func (c Change) Excluded() bool { return c.Kept == "" }

func (c Change) String() string {
	switch {
	case c.Spare != "":
		return fmt.Sprintf("node %s excluded (%s): its ranks go to spare node %s", c.Node, c.Reason, c.Spare)
	case c.Shrunk:
		return fmt.Sprintf("node %s excluded (%s): no spare left, its ranks go to the other nodes (%d now)", c.Node, c.Reason, c.Nodes)
	}
	return fmt.Sprintf("node %s kept (%s) as a replacement with an empty cache: %s", c.Node, c.Reason, c.Kept)
}

// NewPool is the pool of a job of ranks on nodes (ranks fill them in
// blocks, NodeOf) with spares. fits checks a layout (rank r on layout[r])
// against the job's redundancy sets; nil accepts any. A node is
// re-admitted after readmitAfter launches without it (0: never).
func NewPool(ranks int, nodes, spares []string, fits func(layout []string) error, readmitAfter int) *Pool {
	p := &Pool{layout: make([]string, ranks), spares: slices.Clone(spares), fits: fits, readmit: readmitAfter}
	for r := range p.layout {
		p.layout[r] = nodes[NodeOf(r, ranks, len(nodes))]
	}
	return p
}

// Layout is the next launch's nodes by rank: rank r runs on Layout()[r].
func (p *Pool) Layout() []string { return slices.Clone(p.layout) }

// Nodes are the next launch's distinct nodes, in the order of their
// first rank.
func (p *Pool) Nodes() []string { return distinct(p.layout) }

// Spares are the free nodes, the next one used first.
func (p *Pool) Spares() []string { return slices.Clone(p.spares) }

// Excluded lists every exclusion made, oldest first (re-admitted ones
// marked).
func (p *Pool) Excluded() []Exclusion {
	out := make([]Exclusion, len(p.history))
	for i, e := range p.history {
		out[i] = *e
	}
	return out
}

// Fail takes node out of the launch after launch (its incarnation): its
// ranks go to the first spare, or to the other nodes, the least loaded
// first, if the redundancy sets fit there; else it is kept.
func (p *Pool) Fail(node, reason string, launch uint64) Change {
	c := Change{Node: node, Reason: reason}
	if !slices.Contains(p.layout, node) {
		c.Kept = "it is not one of the launch's nodes"
		return c
	}
	switch {
	case len(p.spares) > 0:
		c.Spare, p.spares = p.spares[0], p.spares[1:]
		for r, n := range p.layout {
			if n == node {
				p.layout[r] = c.Spare
			}
		}
	default:
		shrunk, why := p.shrink(node)
		if why != "" {
			c.Kept = why
			return c
		}
		p.layout, c.Shrunk, c.Nodes = shrunk, true, len(distinct(shrunk))
	}
	e := &Exclusion{Node: node, Reason: reason, Launch: launch + 1}
	p.out = append(p.out, e)
	p.history = append(p.history, e)
	return c
}

// shrink is the layout without node, its ranks moved one by one to the
// node holding the fewest ranks (the first of them in the launch's order),
// or why that cannot be.
func (p *Pool) shrink(node string) ([]string, string) {
	rest := slices.DeleteFunc(distinct(p.layout), func(n string) bool { return n == node })
	if len(rest) == 0 {
		return nil, "no spare, and no other node"
	}
	load := map[string]int{}
	for _, n := range p.layout {
		load[n]++
	}
	out := slices.Clone(p.layout)
	for r, n := range out {
		if n != node {
			continue
		}
		least := rest[0]
		for _, m := range rest[1:] {
			if load[m] < load[least] {
				least = m
			}
		}
		out[r] = least
		load[least]++
	}
	if p.fits != nil {
		if err := p.fits(out); err != nil {
			what := fmt.Sprintf("%d nodes", len(rest))
			if len(rest) == 1 {
				what = "1 node"
			}
			return nil, fmt.Sprintf("no spare, and %s cannot hold the redundancy sets (%v)", what, err)
		}
	}
	return out, ""
}

// Launched counts a launch that started: a node excluded for ReadmitAfter
// launches becomes the last spare again. It returns the nodes
// re-admitted.
func (p *Pool) Launched() []string {
	if p.readmit <= 0 {
		return nil
	}
	var back []string
	p.out = slices.DeleteFunc(p.out, func(e *Exclusion) bool {
		e.without++
		if e.without < p.readmit {
			return false
		}
		e.Readmitted = true
		back = append(back, e.Node)
		return true
	})
	p.spares = append(p.spares, back...)
	return back
}

// distinct is layout's nodes in the order of their first rank.
func distinct(layout []string) []string {
	var out []string
	for _, n := range layout {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// compactNodes is layout as jobenv.VarNodes gives it to ranks that
// derive their node: the distinct nodes when ranks fill them in blocks
// (NodeOf), else one node per rank (a list as long as the ranks, which
// NodeOf reads back one to one).
func compactNodes(layout []string) []string {
	nodes := distinct(layout)
	for r, n := range layout {
		if nodes[NodeOf(r, len(layout), len(nodes))] != n {
			return slices.Clone(layout)
		}
	}
	return nodes
}

// ExcludeHosts are the hosts a launcher should leave out after nodes
// failed: the hosts the failed nodes' ranks ran on (hosts[r], "" if
// unknown), except a host that also ran ranks of nodes still in the job —
// on one machine every simulated node shares the host, which then stays.
func ExcludeHosts(layout []string, hosts []string, failed []string) []string {
	keep := map[string]bool{}
	for r, n := range layout {
		if r < len(hosts) && hosts[r] != "" && !slices.Contains(failed, n) {
			keep[hosts[r]] = true
		}
	}
	var out []string
	for r, n := range layout {
		if r < len(hosts) && hosts[r] != "" && slices.Contains(failed, n) && !keep[hosts[r]] && !slices.Contains(out, hosts[r]) {
			out = append(out, hosts[r])
		}
	}
	return out
}

// Summary says what a job that ran out of retries tried: each launch's
// nodes and how it ended, and the nodes excluded.
func Summary(attempts []Attempt, excluded []Exclusion) string {
	var b strings.Builder
	for i, a := range attempts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "launch %d on %s", a.Incarnation, strings.Join(a.Nodes, ","))
		if a.Failure != "" {
			cause := a.Cause
			if cause == "" {
				cause = a.Failure
			}
			fmt.Fprintf(&b, ": %s", cause)
		}
	}
	if len(excluded) > 0 {
		b.WriteString("; excluded:")
		for i, e := range excluded {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s (%s, from launch %d", e.Node, e.Reason, e.Launch)
			if e.Readmitted {
				b.WriteString(", re-admitted")
			}
			b.WriteString(")")
		}
	}
	return b.String()
}

// hostPlan is what a launcher is told of hosts: those to use (Use, nil:
// its own choice) and those to leave out (Exclude).
type hostPlan struct{ Use, Exclude []string }

// hostList follows the hosts a job's ranks ran on and those left out
// after their nodes failed (ExcludeHosts), across launches.
type hostList struct{ seen, out []string }

// add records an attempt's hosts (hosts[r] rank r's) and the nodes it
// lost.
func (h *hostList) add(layout, hosts, failed []string) {
	for _, x := range hosts {
		if x != "" && !slices.Contains(h.seen, x) {
			h.seen = append(h.seen, x)
		}
	}
	for _, x := range ExcludeHosts(layout, hosts, failed) {
		if !slices.Contains(h.out, x) {
			h.out = append(h.out, x)
		}
	}
}

// use is the plan of the next launch: nothing until a host was left out,
// then the hosts seen but those.
func (h *hostList) use() hostPlan {
	if len(h.out) == 0 {
		return hostPlan{}
	}
	p := hostPlan{Exclude: slices.Clone(h.out)}
	for _, x := range h.seen {
		if !slices.Contains(h.out, x) {
			p.Use = append(p.Use, x)
		}
	}
	return p
}
