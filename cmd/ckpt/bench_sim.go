package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/units"
)

// defaultSimRanks are the rank counts of `ckpt bench coord --simulate`.
var defaultSimRanks = []int{1000, 10000, 100000, 1000000}

// runSimulate is `ckpt bench coord --simulate`.
func (f *benchCoordFlags) runSimulate(c *cobra.Command) error {
	for _, name := range []string{"clients", "netns"} {
		if c.Flags().Changed(name) {
			return usagef("--%s: not with --simulate (use --ranks)", name)
		}
	}
	for _, n := range f.ranks.v {
		if n < 1 || n > 1<<27 {
			return usagef("--ranks %d: want 1 to %d", n, 1<<27)
		}
	}
	if len(f.ranks.v) == 0 {
		return usagef("--ranks: want at least one rank count")
	}
	if *f.perNode < 1 {
		return usagef("--per-node %d: want at least 1", *f.perNode)
	}
	r, err := bench.RunCoordSim(bench.CoordSimConfig{Ranks: f.ranks.v, PerNode: *f.perNode, Progress: benchProgress(c)})
	if err != nil {
		return err
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		return writeJSON(w, coordSimJSON(r, *f.perNode))
	}
	t := newTable(w)
	t.row("MODE", "RANKS", "CONNS", "EVENTS", "NS/EVENT", "FLOOR", "RATIO", "JOIN", "ROUND", "LEAVE", "TICK NS/CONN", "HEAP/RANK")
	for _, p := range r.Points {
		t.row(p.Mode, fmt.Sprint(p.Ranks), fmt.Sprint(p.Conns), fmt.Sprint(p.Events),
			fmt.Sprintf("%.0f", p.NsPerEvent), fmt.Sprintf("%.0f", p.FloorNsPerEvent), fmt.Sprintf("%.2f", p.EventCostRatio),
			fmt.Sprintf("%.0f", p.JoinNsPerEvent), fmt.Sprintf("%.0f", p.RoundNsPerEvent),
			fmt.Sprintf("%.0f", p.LeaveNsPerEvent), fmt.Sprintf("%.1f", p.TickNsPerConn), units.FormatSize(p.HeapBytesPerRank))
	}
	t.flush()
	fmt.Fprintf(w, "\nslopes against log(ranks) of log(ratio of ns per event to the floor) and of log(heap) (bounds %.2f and %.2f),\nand of the ns per event and the floor alone:\n",
		bench.MaxEventCostSlope, bench.MaxMemorySlope)
	t = newTable(w)
	t.row("MODE", "RANKS", "EVENT COST SLOPE", "MEMORY SLOPE", "NS/EVENT", "FLOOR", "")
	for _, s := range r.Slopes {
		verdict := "ok"
		if !s.OK {
			verdict = "OUT OF BOUNDS"
		}
		t.row(s.Mode, fmt.Sprintf("%d → %d", s.FromRanks, s.ToRanks), fmt.Sprintf("%+.3f", s.EventCostSlope), fmt.Sprintf("%.3f", s.MemorySlope),
			fmt.Sprintf("%+.3f", s.NsPerEventSlope), fmt.Sprintf("%+.3f", s.FloorSlope), verdict)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if !r.OK {
		fmt.Fprintln(w, "\n*** WARNING: a slope is out of bounds: the cost per event grows with the ranks, or the memory faster than them (or a busy machine disturbed a run) ***")
	}
	return nil
}

// coordSimJSON is the JSON report of `ckpt bench coord --simulate`.
func coordSimJSON(r bench.CoordSimResult, perNode int) object {
	points := make([]object, len(r.Points))
	for i, p := range r.Points {
		points[i] = object{
			{"mode", p.Mode},
			{"ranks", p.Ranks},
			{"conns", p.Conns},
			{"events", p.Events},
			{"coord_events", p.CoordEvents},
			{"cpu_seconds", num(p.Seconds)},
			{"wall_seconds", num(p.WallSeconds)},
			{"ns_per_event", num(p.NsPerEvent)},
			{"join_events", p.JoinEvents},
			{"join_ns_per_event", num(p.JoinNsPerEvent)},
			{"round_events", p.RoundEvents},
			{"round_ns_per_event", num(p.RoundNsPerEvent)},
			{"leave_events", p.LeaveEvents},
			{"leave_ns_per_event", num(p.LeaveNsPerEvent)},
			{"tick_ns_per_conn", num(p.TickNsPerConn)},
			{"heap_bytes", num(p.HeapBytes)},
			{"heap_bytes_per_rank", num(p.HeapBytesPerRank)},
			{"floor_ns_per_event", num(p.FloorNsPerEvent)},
			{"event_cost_ratio", num(p.EventCostRatio)},
			{"runs", p.Runs},
		}
	}
	slopes := make([]object, len(r.Slopes))
	for i, s := range r.Slopes {
		slopes[i] = object{
			{"mode", s.Mode},
			{"from_ranks", s.FromRanks},
			{"to_ranks", s.ToRanks},
			{"event_cost_slope", num(s.EventCostSlope)},
			{"memory_slope", num(s.MemorySlope)},
			{"ns_per_event_slope", num(s.NsPerEventSlope)},
			{"floor_slope", num(s.FloorSlope)},
			{"ok", s.OK},
		}
	}
	return object{
		{"per_node", perNode},
		{"points", points},
		{"slopes", slopes},
		{"max_event_cost_slope", bench.MaxEventCostSlope},
		{"max_memory_slope", bench.MaxMemorySlope},
		{"scaling_ok", r.OK},
	}
}

const benchCoordSimLong = `

--simulate drives the coordinator's pure state machines (package coord:
no sockets, no goroutines) through the events of a job at each rank count
of --ranks (default 1000,10000,100000,1000000): every rank connects and
says Hello, one checkpoint round (a decide collective, then the commit
vote), a tick of every machine with every connection due a heartbeat,
then every rank leaves and disconnects. Flat, every rank is a connection
to the coordinator; as a tree, P ranks per node (--per-node) connect to
their node's relay, simulated too, which speaks for them upstream. It
reports per mode and size the events handed to the state machines, the
nanoseconds per event (each phase's too) in CPU time of the process,
garbage collection included, so that other work on a busy machine does
not count (the elapsed time is beside it; the fastest of several runs;
building the messages, a driver's decoding, is not counted),
the tick's nanoseconds per connection, and the live heap after a
collection with every rank joined and the round done, per rank.

Beside each size it measures a floor in the same run: the CPU time per
event of the least a coordinator keyed by connection does, a record per
connection in a map, found and touched per event (floor_ns_per_event);
event_cost_ratio is ns_per_event over it. Beyond the caches (about a
million records) every access waits for memory and both grow with the
size together; the ratio grows only if the state machine does more work
per event at a larger size. Between consecutive sizes of a mode it
computes the slopes against log(ranks) of log(event_cost_ratio)
(event_cost_slope, at most 0.5: work per event that does not grow with
the ranks; an O(ranks) scan per event gives about 1) and of log(heap)
(memory_slope, at most 1.25: linear memory), and, for reading, those of
ns_per_event and of the floor alone. scaling_ok says whether all are
within bounds; the text output warns when one is not. 1M ranks need
about 1 GB of memory.`
