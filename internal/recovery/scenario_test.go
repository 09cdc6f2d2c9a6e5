package recovery

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/redundancy"
)

// TestScenarios runs testdata/*.txt. Each script builds a small world —
// checkpoints written into node caches and onto the shared tier, then
// lost nodes, corrupt and missing files — and asks for a restart plan. The
// environment derives the planner's Input from the world the way the
// engine does (every rank of the restarted job reports what the cache of
// its node now holds of its files), so the scripts exercise the
// translation as well as the rules. Commands:
//
//	checkpoint NAME id=ID scheme=S nodes=(n,...) set=(r,...)... [shared] [ranks-intact]
//	    ranks r run on nodes[r]; every node caches the manifest and its
//	    ranks' data and parity; shared puts an unchecked copy on the tier
//	lose NODE...                  the nodes' caches are gone
//	corrupt NAME [data=(r,...)] [parity=(r,...)] [manifest=(node,...)]
//	remove NAME [data=(r,...)] [parity=(r,...)] [manifest=(node,...)]
//	    damage the copies in the cache of the node that wrote them
//	shared NAME [checked] [missing=(r,...)] [corrupt=(r,...)] [none]
//	    the shared tier's copy: parts unchecked (or all intact if checked)
//	    but for those listed; none removes the copy
//	restart nodes=(n,...) [lazy] [fail=(action:NAME,...)]
//	    the job restarts with rank r on nodes[r]; prints the plan. lazy
//	    leaves the holdings unknown, so the plan asks to verify first;
//	    each step taken is printed as "> step". An attempt in fail fails
//	    and is reported back.
func TestScenarios(t *testing.T) {
	runScripts(t, func(t *testing.T) func(*command) string {
		e := &world{t: t, caches: map[string]map[string]*cached{}, shared: map[string]*Shared{}}
		return e.handle
	})
}

type world struct {
	t      *testing.T
	ckpts  []*Checkpoint                 // as written, Manifests/Held/Shared unset
	caches map[string]map[string]*cached // node → checkpoint name → what it holds
	shared map[string]*Shared            // checkpoint name → its copy
	out    strings.Builder
}

// cached is what one node's cache holds of one checkpoint.
type cached struct {
	manifest     State
	data, parity map[int]State
}

func (w *world) handle(c *command) string {
	w.out.Reset()
	switch c.Name {
	case "checkpoint":
		w.cmdCheckpoint(c)
	case "lose":
		for _, a := range c.Args {
			delete(w.caches, a.Key)
		}
	case "corrupt":
		w.damage(c, Corrupt)
	case "remove":
		w.damage(c, Missing)
	case "shared":
		w.cmdShared(c)
	case "restart":
		w.cmdRestart(c)
	default:
		w.t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
	}
	return w.out.String()
}

func (w *world) vals(c *command, key string) []string {
	for _, a := range c.Args {
		if a.Key == key {
			return a.Vals
		}
	}
	return nil
}

func (w *world) ints(c *command, vals []string) []int {
	var out []int
	for _, v := range vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			w.t.Fatalf("%s: %v", c.Pos, err)
		}
		out = append(out, n)
	}
	return out
}

func (w *world) find(c *command) *Checkpoint {
	if len(c.Args) == 0 {
		w.t.Fatalf("%s: no checkpoint named", c.Pos)
	}
	for _, cp := range w.ckpts {
		if cp.Name == c.Args[0].Key {
			return cp
		}
	}
	w.t.Fatalf("%s: no checkpoint %q", c.Pos, c.Args[0].Key)
	return nil
}

func (w *world) cmdCheckpoint(c *command) {
	cp := &Checkpoint{Name: c.Args[0].Key, Nodes: w.vals(c, "nodes"), Scheme: w.vals(c, "scheme")[0]}
	id, err := strconv.ParseUint(w.vals(c, "id")[0], 10, 64)
	if err != nil {
		w.t.Fatalf("%s: %v", c.Pos, err)
	}
	cp.ID, cp.Ranks = id, len(cp.Nodes)
	sc, err := redundancy.ParseScheme(cp.Scheme)
	if err != nil {
		w.t.Fatalf("%s: %v", c.Pos, err)
	}
	cp.M = sc.Parity
	for _, a := range c.Args {
		if a.Key == "set" {
			cp.Sets = append(cp.Sets, w.ints(c, a.Vals))
		}
	}
	w.ckpts = append(w.ckpts, cp)
	for r, n := range cp.Nodes {
		if w.caches[n] == nil {
			w.caches[n] = map[string]*cached{}
		}
		h := w.caches[n][cp.Name]
		if h == nil {
			h = &cached{manifest: Intact, data: map[int]State{}, parity: map[int]State{}}
			w.caches[n][cp.Name] = h
		}
		h.data[r], h.parity[r] = Intact, Intact
	}
	if c.Has("shared") {
		w.shared[cp.Name] = &Shared{}
	}
}

func (w *world) damage(c *command, st State) {
	cp := w.find(c)
	for _, what := range []string{"data", "parity"} {
		for _, r := range w.ints(c, w.vals(c, what)) {
			h := w.caches[cp.Nodes[r]][cp.Name]
			if h == nil {
				w.t.Fatalf("%s: node %s holds nothing of %s", c.Pos, cp.Nodes[r], cp.Name)
			}
			if what == "data" {
				h.data[r] = st
			} else {
				h.parity[r] = st
			}
		}
	}
	for _, n := range w.vals(c, "manifest") {
		h := w.caches[n][cp.Name]
		if h == nil {
			w.t.Fatalf("%s: node %s holds nothing of %s", c.Pos, n, cp.Name)
		}
		h.manifest = st
	}
}

func (w *world) cmdShared(c *command) {
	cp := w.find(c)
	if c.Has("none") {
		delete(w.shared, cp.Name)
		return
	}
	s := &Shared{}
	fill := Unknown
	if c.Has("checked") {
		fill = Intact
	}
	missing, corrupt := w.ints(c, w.vals(c, "missing")), w.ints(c, w.vals(c, "corrupt"))
	if fill != Unknown || len(missing)+len(corrupt) > 0 {
		s.Parts = make([]State, cp.Ranks)
		for r := range s.Parts {
			s.Parts[r] = fill
		}
		for _, r := range missing {
			s.Parts[r] = Missing
		}
		for _, r := range corrupt {
			s.Parts[r] = Corrupt
		}
	}
	w.shared[cp.Name] = s
}

// input derives the planner's Input from the world for a job on nodes.
func (w *world) input(nodes []string, lazy bool) Input {
	in := Input{Ranks: len(nodes), Nodes: nodes}
	for _, proto := range w.ckpts {
		cp := *proto
		cp.Manifests = map[string]State{}
		for _, n := range nodes {
			if h := w.caches[n][cp.Name]; h != nil {
				cp.Manifests[n] = h.manifest
			}
		}
		if s := w.shared[cp.Name]; s != nil {
			cp.Shared = &Shared{Parts: slices.Clone(s.Parts)}
		}
		if cp.inCache() || cp.Shared != nil {
			if !lazy {
				w.verify(&in, &cp)
			}
			in.Checkpoints = append(in.Checkpoints, cp)
		}
	}
	return in
}

// verify fills Held as the ranks of the job would: each rank looks in the
// cache of its node now.
func (w *world) verify(in *Input, cp *Checkpoint) {
	if !cp.inCache() || cp.Ranks != in.Ranks {
		return // the engine never checks these
	}
	cp.Held = make([]Held, in.Ranks)
	for r, n := range in.Nodes {
		h := w.caches[n][cp.Name]
		cp.Held[r] = Held{Data: Missing, Parity: Missing}
		if h == nil {
			continue
		}
		if st, ok := h.data[r]; ok {
			cp.Held[r].Data = st
		}
		if st, ok := h.parity[r]; ok {
			cp.Held[r].Parity = st
		}
	}
}

func (w *world) cmdRestart(c *command) {
	in := w.input(w.vals(c, "nodes"), c.Has("lazy"))
	fail := w.vals(c, "fail")
	for step := 0; ; step++ {
		if step > 2*len(in.Checkpoints)+2 {
			w.t.Fatalf("%s: the plan does not settle", c.Pos)
		}
		p, err := Decide(in)
		if err != nil {
			fmt.Fprintf(&w.out, "error: %v\n", err)
			return
		}
		key := p.Action.String() + ":" + p.Name
		switch {
		case p.Action == Verify:
			fmt.Fprintf(&w.out, "> verify %s\n", p.Name)
			i := slices.IndexFunc(in.Checkpoints, func(cp Checkpoint) bool { return cp.Name == p.Name && cp.ID == p.ID })
			w.verify(&in, &in.Checkpoints[i])
		case slices.Contains(fail, key):
			fmt.Fprintf(&w.out, "> %s %s fails\n", p.Action, p.Name)
			fail = slices.DeleteFunc(fail, func(s string) bool { return s == key })
			in.Failed = append(in.Failed, Failure{Name: p.Name, ID: p.ID, Action: p.Action, Reason: "injected"})
		default:
			w.out.WriteString(p.String())
			return
		}
	}
}
