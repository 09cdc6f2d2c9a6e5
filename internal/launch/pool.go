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
	var keep []string
	for r, n := range layout {
		if r < len(hosts) && hosts[r] != "" && !slices.Contains(failed, n) {
			keep = append(keep, hosts[r])
		}
	}
	var out []string
	for r, n := range layout {
		if r < len(hosts) && hosts[r] != "" && slices.Contains(failed, n) && !containsHost(keep, hosts[r]) && !containsHost(out, hosts[r]) {
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
// its own choice) and those to leave out (Exclude); or, once every node
// of the launch has a host, the host of each rank (Pin, Pin[r] rank r's),
// which the launcher must follow (srun's arbitrary distribution, mpirun's
// sequential mapping). Unpinned says why a launch after the first is not
// pinned ("" if it is, or if no host is known yet).
type hostPlan struct {
	Use, Exclude []string
	Pin          []string
	Unpinned     string
}

// hostList follows the hosts a job's ranks ran on, the host of each of
// its nodes, and the hosts left out after their nodes failed
// (ExcludeHosts), across launches, a host's names compared by SameHost
// (the ranks may say a short name where the launcher's list has a
// qualified one). It pins each node to its host: a
// node's cache lies on its host, so a node that moved would find none
// there and be restored like a lost one.
type hostList struct {
	seen, out []string
	// pin is each node's host: where its ranks ran, or, for a node that
	// has not run yet (a spare), the free host plan gave it.
	pin map[string]string
}

// add records an attempt's hosts (hosts[r] rank r's, "" if it did not
// say) and the nodes it lost: each node's host is where its first rank
// that said so ran.
func (h *hostList) add(layout, hosts, failed []string) {
	for _, x := range hosts {
		if x != "" && !containsHost(h.seen, x) {
			h.seen = append(h.seen, x)
		}
	}
	if h.pin == nil {
		h.pin = map[string]string{}
	}
	done := map[string]bool{}
	for r, n := range layout {
		if r < len(hosts) && hosts[r] != "" && !done[n] {
			h.pin[n], done[n] = hosts[r], true
		}
	}
	for _, x := range ExcludeHosts(layout, hosts, failed) {
		if !containsHost(h.out, x) {
			h.out = append(h.out, x)
		}
	}
}

// plan is the next launch's hosts for layout (rank r on node layout[r]):
// before any host is known the launcher's choice; then each node on its
// host, and a node without one (a spare taking a failed node's ranks) on
// the first free host: of spare() (the hosts the launcher may use, such
// as a Slurm allocation's nodes; asked only then), or seen, that no node
// of the launch holds and that is not left out; else on the host of a
// node no longer in the launch that was not left out (on one machine,
// where every node shares the host). With no free host, the launch is
// not pinned (Unpinned says why): the hosts seen but those left out, as
// before pinning.
func (h *hostList) plan(layout []string, spare func() ([]string, error)) hostPlan {
	var p hostPlan
	if len(h.out) > 0 {
		p.Exclude = slices.Clone(h.out)
		for _, x := range h.seen {
			if !containsHost(h.out, x) {
				p.Use = append(p.Use, x)
			}
		}
	}
	if len(h.pin) == 0 {
		return p
	}
	nodes := distinct(layout)
	host := map[string]string{}
	var held []string // the hosts of the launch's nodes
	for _, n := range nodes {
		if x := h.pin[n]; x != "" && !containsHost(h.out, x) {
			host[n] = x
			held = append(held, x)
		}
	}
	var candidates []string
	var askErr error
	asked := false
	for _, n := range nodes {
		if host[n] != "" {
			continue
		}
		if !asked && spare != nil {
			asked = true
			candidates, askErr = spare()
		}
		x := h.free(append(slices.Clone(candidates), h.seen...), held, nodes)
		switch {
		case x == "" && askErr != nil:
			p.Unpinned = fmt.Sprintf("node %s has no host, and the launcher's hosts are not known: %v", n, askErr)
			return p
		case x == "":
			p.Unpinned = fmt.Sprintf("node %s has no host, and no host is free (give the allocation spare hosts)", n)
			return p
		}
		host[n], h.pin[n] = x, x
		held = append(held, x)
	}
	p.Pin = make([]string, len(layout))
	for r, n := range layout {
		p.Pin[r] = host[n]
	}
	return p
}

// free is the first of candidates neither held nor left out; else the
// host of a node not among nodes that was not left out; else "".
func (h *hostList) free(candidates, held, nodes []string) string {
	for _, x := range candidates {
		if !containsHost(held, x) && !containsHost(h.out, x) {
			return x
		}
	}
	var gone []string
	for n := range h.pin {
		if !slices.Contains(nodes, n) {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone) // one answer, whatever the map's order
	for _, n := range gone {
		if x := h.pin[n]; !containsHost(h.out, x) {
			return x
		}
	}
	return ""
}

// HostSource is a launcher that knows hosts its ranks may run on beyond
// those they ran on: where a spare node is put (srun: the allocation's
// nodes, or the cluster's).
type HostSource interface {
	SpareHosts() ([]string, error)
}

// spareHosts is l's SpareHosts, nil if it has none.
func spareHosts(l Launcher) func() ([]string, error) {
	if s, ok := l.(HostSource); ok {
		return s.SpareHosts
	}
	return nil
}

// pinEvent is the progress of a launch of an External launcher that is
// pinned ("pinned: node0 on n1, node2 on n3") or not pinned though hosts
// are known ("not pinned: …"); ok false for none (the first launch, or
// Local, which runs every node on its own host).
func pinEvent(l Launcher, layout []string, p hostPlan) (Event, bool) {
	if _, ok := l.(*External); !ok {
		return Event{}, false
	}
	switch {
	case p.Unpinned != "":
		return Event{Kind: "pin", Reason: "not pinned: " + p.Unpinned}, true
	case p.Pin == nil:
		return Event{}, false
	}
	var b strings.Builder
	b.WriteString("pinned:")
	done := map[string]bool{}
	for r, n := range layout {
		if !done[n] {
			done[n] = true
			if len(done) > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s on %s", n, p.Pin[r])
		}
	}
	return Event{Kind: "pin", Reason: b.String()}, true
}
