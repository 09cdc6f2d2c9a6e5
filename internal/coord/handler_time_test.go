package coord

import (
	"sort"
	"strings"
	"time"
)

// tick [DURATION] [only=SERVER]: time advances by DURATION (default 0),
// then every server (or only the one named) ticks, the coordinator first.
// A server that does not tick stands for a hung process.
func (e *env) cmdTick(c *command) {
	if len(c.Args) > 0 && c.Args[0].Vals == nil {
		d, err := time.ParseDuration(c.Args[0].Key)
		if err != nil {
			e.t.Fatalf("%s: %v", c.Pos, err)
		}
		e.now += d
	}
	only := e.str(c, "only", "")
	for _, s := range append([]*server{e.coord}, e.relays...) {
		if only == "" || only == s.name {
			e.apply(s, s.sm.Tick(e.now))
		}
	}
}

// stabilize: deliver the messages in flight between relays and the
// coordinator until none is left, one message per link and direction in
// turn (relays in creation order, upward first).
func (e *env) cmdStabilize(c *command) {
	for progress := true; progress; {
		progress = false
		for _, r := range e.relays {
			if len(r.upq) > 0 {
				msg := r.upq[0]
				r.upq = r.upq[1:]
				progress = true
				if msg == nil {
					e.printf("coord reads end of stream from %s", r.name)
					e.nested(func() { e.apply(e.coord, e.coord.sm.Disconnect(r.upID, nil, e.now)) })
				} else {
					e.printf("coord reads %v from %s", msg, r.name)
					e.nested(func() { e.apply(e.coord, e.coord.sm.Receive(r.upID, msg, e.now)) })
				}
			}
			if len(r.downq) > 0 {
				msg := r.downq[0]
				r.downq = r.downq[1:]
				progress = true
				if msg == nil {
					e.printf("%s reads end of stream from coord", r.name)
					e.nested(func() { e.apply(r, r.sm.Disconnect(Upstream, nil, e.now)) })
				} else {
					e.printf("%s reads %v from coord", r.name, msg)
					e.nested(func() { e.apply(r, r.sm.Receive(Upstream, msg, e.now)) })
				}
			}
		}
	}
}

func (e *env) nested(f func()) {
	e.indent += "  "
	f()
	e.indent = e.indent[:len(e.indent)-2]
}

// results: every client's last Result, grouped, so that a script can show
// in one line that all clients got the same.
func (e *env) cmdResults(c *command) {
	groups := map[string][]string{}
	for name, r := range e.lastResult {
		groups[r] = append(groups[r], name)
	}
	var lines []string
	for r, names := range groups {
		sort.Strings(names)
		lines = append(lines, strings.Join(names, ",")+": "+r)
	}
	sort.Strings(lines)
	for _, l := range lines {
		e.printf("%s", l)
	}
}
