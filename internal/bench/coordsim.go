package bench

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/wire"
)

// CoordSimConfig is what `ckpt bench coord --simulate` measures: the pure
// state machines of package coord, driven without sockets through the
// events of a job of each size in Ranks — every rank joins, one
// checkpoint round (the decision to checkpoint, the commit vote), every
// rank leaves and disconnects — flat (one connection per rank to the
// coordinator) and as a tree (PerNode ranks per node's relay, one
// connection per relay to the coordinator; the relays are simulated too).
type CoordSimConfig struct {
	Ranks    []int
	PerNode  int
	Progress func(step string)
}

// The scaling checks, between two sizes of a mode. The cost per event is
// taken as a ratio to a floor measured in the same run at the same size:
// the CPU time of the least a coordinator keyed by connection does per
// event, finding the connection's record in a map of all of them and
// touching it, the records holding as much memory as the simulation's
// state machines per rank (simFloor). Beyond the caches, at about a million records,
// every such access waits for memory, so the cost in nanoseconds grows
// with the size whatever the algorithm (2.7 × from 100K to 1M ranks flat
// in docs/PERFORMANCE.md, the floor 2.8 ×); the ratio does not, unless the state machine does more work per
// event at a larger size. The slope of log(ratio) against log(ranks)
// must stay at most MaxEventCostSlope (0 is work per event that does not
// grow; an O(ranks) scan per event gives about 1), and that of log(heap)
// against log(ranks) at most MaxMemorySlope (1 is linear; the slack
// covers a map's or a slice's doubling landing between two sizes;
// quadratic memory gives 2).
const (
	MaxEventCostSlope = 0.5
	MaxMemorySlope    = 1.25
)

// CoordSimPoint is one mode at one size.
type CoordSimPoint struct {
	Mode  string // "flat" or "tree"
	Ranks int
	// Conns are the coordinator's connections: one per rank flat, one
	// per node's relay as a tree.
	Conns int
	// Events are the calls into state machines in one run (Connect,
	// Receive, Disconnect, Tick of the coordinator and, as a tree, of
	// the relays), CoordEvents those of the coordinator.
	Events, CoordEvents int
	// Seconds is the fastest run's CPU time in the state machines and
	// the simulation's delivery queue, counted for the whole process (the
	// garbage collector's threads too), so that other work on a busy
	// machine does not count; building the messages, as a driver's
	// decoding, is not counted. WallSeconds is the same run's elapsed
	// time. NsPerEvent is Seconds over Events, and the phases' figures
	// are the same run's.
	Seconds, WallSeconds                 float64
	NsPerEvent                           float64
	JoinNsPerEvent, RoundNsPerEvent      float64
	LeaveNsPerEvent                      float64
	JoinEvents, RoundEvents, LeaveEvents int
	TickNsPerConn                        float64 // one Tick of every machine, over every connection
	HeapBytes, HeapBytesPerRank          float64
	Runs                                 int
	// FloorNsPerEvent is the floor at this size (simFloor, with the
	// run's heap per rank), the fastest of the runs, each beside one of
	// the simulation's; EventCostRatio is NsPerEvent over it.
	FloorNsPerEvent, EventCostRatio float64
}

// CoordSimSlope compares one mode's consecutive sizes.
type CoordSimSlope struct {
	Mode               string
	FromRanks, ToRanks int
	// EventCostSlope is the slope of log(EventCostRatio), the check;
	// NsPerEventSlope and FloorSlope those of the nanoseconds per event
	// and of the floor, which the memory hierarchy makes grow together.
	EventCostSlope, MemorySlope float64
	NsPerEventSlope, FloorSlope float64
	OK                          bool // both within their bounds
}

// CoordSimResult is the simulation's report.
type CoordSimResult struct {
	Points []CoordSimPoint
	Slopes []CoordSimSlope
	// OK says every slope is within its bound: the cost per event does
	// not grow with the ranks and the memory is linear in them.
	OK bool
}

// RunCoordSim runs the simulation, flat then tree, at every size.
func RunCoordSim(cfg CoordSimConfig) (CoordSimResult, error) {
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.PerNode < 1 {
		return CoordSimResult{}, fmt.Errorf("bench coord --simulate: %d ranks per node", cfg.PerNode)
	}
	sizes := slices.Clone(cfg.Ranks)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	if len(sizes) == 0 || sizes[0] < 1 || sizes[len(sizes)-1] > math.MaxInt32 {
		return CoordSimResult{}, fmt.Errorf("bench coord --simulate: rank counts %v: want at least one, each in [1, %d]", cfg.Ranks, math.MaxInt32)
	}
	var points []CoordSimPoint
	for _, mode := range []string{"flat", "tree"} {
		for _, n := range sizes {
			runs := simRuns(n)
			cfg.Progress(fmt.Sprintf("simulate %s, %d ranks (%d runs)", mode, n, runs))
			p, err := simPoint(mode, n, cfg.PerNode, runs)
			if err != nil {
				return CoordSimResult{}, fmt.Errorf("%s, %d ranks: %w", mode, n, err)
			}
			points = append(points, p)
		}
	}
	slopes, ok := CoordSimSlopes(points)
	return CoordSimResult{Points: points, Slopes: slopes, OK: ok}, nil
}

// simRuns is how many times a size runs, the fastest counting: small
// sizes take microseconds, which one preemption on a busy machine would
// double, so they run until about 1M ranks went through; at least twice.
func simRuns(n int) int { return min(max(1_000_000/n, 2), 10) }

// CoordSimSlopes computes the slopes between each mode's consecutive
// sizes, in the order of points, and whether all are within bounds.
func CoordSimSlopes(points []CoordSimPoint) ([]CoordSimSlope, bool) {
	var out []CoordSimSlope
	ok := true
	for i := 1; i < len(points); i++ {
		a, b := points[i-1], points[i]
		if a.Mode != b.Mode || a.Ranks == b.Ranks {
			continue
		}
		x := math.Log(float64(b.Ranks) / float64(a.Ranks))
		s := CoordSimSlope{Mode: a.Mode, FromRanks: a.Ranks, ToRanks: b.Ranks,
			EventCostSlope:  math.Log(b.EventCostRatio/a.EventCostRatio) / x,
			MemorySlope:     math.Log(b.HeapBytes/a.HeapBytes) / x,
			NsPerEventSlope: math.Log(b.NsPerEvent/a.NsPerEvent) / x,
			FloorSlope:      math.Log(b.FloorNsPerEvent/a.FloorNsPerEvent) / x}
		// A measurement that is not positive (a heap within a
		// collection's noise at a few ranks) proves nothing; NaN fails
		// both comparisons.
		s.OK = s.EventCostSlope <= MaxEventCostSlope && s.MemorySlope <= MaxMemorySlope &&
			min(a.HeapBytes, b.HeapBytes, a.EventCostRatio, b.EventCostRatio) > 0
		ok = ok && s.OK
		out = append(out, s)
	}
	return out, ok
}

// simPoint runs one mode at one size runs times and keeps the fastest.
func simPoint(mode string, n, perNode, runs int) (CoordSimPoint, error) {
	var best CoordSimPoint
	floor := math.Inf(1)
	for i := range runs {
		p, err := simOnce(mode, n, perNode)
		if err != nil {
			return p, err
		}
		if i == 0 || p.Seconds < best.Seconds {
			best = p
		}
		floor = min(floor, simFloor(n, int(p.HeapBytesPerRank)))
	}
	best.Runs = runs
	best.FloorNsPerEvent = floor
	best.EventCostRatio = best.NsPerEvent / floor
	return best, nil
}

// simFloor is the CPU time per event, in nanoseconds, of the least a
// coordinator keyed by connection does for the events of a job of n
// connections of one rank each, holding as much memory per rank as the
// simulation did (perRank bytes): each connects (a record of perRank
// bytes put in a map), its record is found and touched four times (Hello,
// two contributions, Leave), then it disconnects (the record deleted).
// The same memory makes the same trips beyond the caches. It runs until
// about 300K events went through, so that small sizes are measured too.
func simFloor(n, perRank int) float64 {
	perRank = min(max(perRank, 16), 1<<20)
	reps := max(1, 300_000/(6*n))
	clk := startClock()
	for range reps {
		m := make(map[uint64][]byte)
		for r := range n {
			m[uint64(r)] = make([]byte, perRank)
		}
		for pass := range 4 {
			for r := range n {
				rec := m[uint64(r)]
				rec[0] += byte(pass)
				rec[len(rec)/2]++
			}
		}
		for r := range n {
			delete(m, uint64(r))
		}
	}
	return clk.cpu() * 1e9 / float64(6*n*reps)
}

// simDelivery is a message (nil: the end of the connection) on its way
// from one simulated machine to another: to the coordinator from relay
// conn's upstream, or to relay conn from the coordinator.
type simDelivery struct {
	toCoord bool
	conn    coord.ConnID
	msg     wire.Msg
}

// simJob is a job of simulated state machines and their message counts.
type simJob struct {
	m      *coord.Machine
	relays []*coord.Relay // tree only
	queue  []simDelivery
	events int
	coordN int
	// What reached the ranks, by type; and the first thing that went
	// wrong (a close or an abort no rank asked for).
	got map[wire.Type]int
	err error
}

func (j *simJob) fail(format string, args ...any) {
	if j.err == nil {
		j.err = fmt.Errorf(format, args...)
	}
}

// fromCoord carries out the coordinator's actions: flat, its sends reach
// ranks; as a tree, relays.
func (j *simJob) fromCoord(rd coord.Ready) {
	j.events++
	j.coordN++
	for _, s := range rd.Sends {
		if j.relays == nil {
			j.got[s.Msg.Type()]++
		} else {
			j.queue = append(j.queue, simDelivery{conn: s.Conn, msg: s.Msg})
		}
	}
	for _, c := range rd.Closes {
		j.fail("the coordinator closed %v: %s", c.Conn, c.Reason)
	}
	j.notices(rd)
}

// fromRelay carries out relay i's actions: sends upstream reach the
// coordinator, the others ranks; closing upstream (every local rank left)
// ends the coordinator's connection.
func (j *simJob) fromRelay(i int, rd coord.Ready) {
	j.events++
	for _, s := range rd.Sends {
		if s.Conn == coord.Upstream {
			j.queue = append(j.queue, simDelivery{toCoord: true, conn: coord.ConnID(i), msg: s.Msg})
		} else {
			j.got[s.Msg.Type()]++
		}
	}
	for _, c := range rd.Closes {
		if c.Conn == coord.Upstream && c.Reason == "every local rank left" {
			j.queue = append(j.queue, simDelivery{toCoord: true, conn: coord.ConnID(i)})
			continue
		}
		j.fail("relay %d closed %v: %s", i, c.Conn, c.Reason)
	}
	j.notices(rd)
}

func (j *simJob) notices(rd coord.Ready) {
	for _, n := range rd.Notices {
		if n.Kind == coord.NoticeAborted {
			j.fail("aborted: %s", n.Reason)
		}
	}
}

// drain delivers the messages in flight until none is left.
func (j *simJob) drain() {
	for k := 0; k < len(j.queue); k++ {
		d := j.queue[k]
		j.queue[k] = simDelivery{}
		switch {
		case d.toCoord && d.msg == nil:
			j.fromCoord(j.m.Disconnect(d.conn, nil, 0))
		case d.toCoord:
			j.fromCoord(j.m.Receive(d.conn, d.msg, 0))
		default:
			j.fromRelay(int(d.conn), j.relays[d.conn].Receive(coord.Upstream, d.msg, 0))
		}
	}
	j.queue = j.queue[:0]
}

// rank delivers an event of rank r's connection to its machine: the
// coordinator flat, its node's relay as a tree (nil msg: Connect).
func (j *simJob) rank(r, perNode int, msg wire.Msg, disconnect bool) {
	c := coord.ConnID(r)
	if j.relays == nil {
		switch {
		case disconnect:
			j.fromCoord(j.m.Disconnect(c, nil, 0))
		case msg == nil:
			j.fromCoord(j.m.Connect(c, 0))
		default:
			j.fromCoord(j.m.Receive(c, msg, 0))
		}
		return
	}
	i := r / perNode
	relay := j.relays[i]
	switch {
	case disconnect:
		j.fromRelay(i, relay.Disconnect(c, nil, 0))
	case msg == nil:
		j.fromRelay(i, relay.Connect(c, 0))
	default:
		j.fromRelay(i, relay.Receive(c, msg, 0))
		if _, hello := msg.(*wire.Hello); hello && relay.WantsUpstream() {
			// The node's ranks all joined: its driver dials the
			// coordinator.
			j.fromCoord(j.m.Connect(coord.ConnID(i), 0))
			j.fromRelay(i, relay.Connect(coord.Upstream, 0))
		}
	}
	j.drain()
}

const simToken = "sim"

// simOnce runs the job once.
func simOnce(mode string, n, perNode int) (CoordSimPoint, error) {
	p := CoordSimPoint{Mode: mode, Ranks: n, Conns: n}
	tree := mode == "tree"
	base := heapNow()
	m, err := coord.New(coord.Config{Size: n, Token: simToken, Relays: tree})
	if err != nil {
		return p, err
	}
	j := &simJob{m: m, got: make(map[wire.Type]int)}
	if tree {
		for lo := 0; lo < n; lo += perNode {
			ranks := make([]int32, 0, min(perNode, n-lo))
			for r := lo; r < min(lo+perNode, n); r++ {
				ranks = append(ranks, int32(r))
			}
			relay, err := coord.NewRelay(coord.RelayConfig{Token: simToken, Node: fmt.Sprintf("node%d", lo/perNode), Ranks: ranks})
			if err != nil {
				return p, err
			}
			j.relays = append(j.relays, relay)
		}
		p.Conns = len(j.relays)
	}
	node := func(r int) string {
		if tree {
			return fmt.Sprintf("node%d", r/perNode)
		}
		return fmt.Sprintf("node%d", r)
	}
	// Each phase's messages are built before its clock starts, as a
	// driver's reader goroutines decode frames off the machine's loop.
	var joinS, roundS, leaveS, wall float64
	// Rank r's connection opens (connect), says msgs[r], and ends
	// (disconnect), as asked.
	phase := func(msgs []wire.Msg, connect, disconnect bool, events *int, seconds *float64) error {
		before := j.events
		start := startClock()
		for r, msg := range msgs {
			if connect {
				j.rank(r, perNode, nil, false)
			}
			j.rank(r, perNode, msg, false)
			if disconnect {
				j.rank(r, perNode, nil, true)
			}
		}
		*seconds += start.cpu()
		wall += start.wall()
		*events += j.events - before
		return j.err
	}

	// Join: every rank connects and says Hello.
	hellos := make([]wire.Msg, n)
	for r := range n {
		hellos[r] = &wire.Hello{Token: simToken, Node: node(r), Ranks: []int32{int32(r)}}
	}
	if err := phase(hellos, true, false, &p.JoinEvents, &joinS); err != nil {
		return p, fmt.Errorf("join: %w", err)
	}
	hellos = nil
	if st := m.Status(); st.Phase != coord.Running || j.got[wire.TypeWelcome] != n {
		return p, fmt.Errorf("join: coordinator %+v, %d of %d ranks welcomed", st, j.got[wire.TypeWelcome], n)
	}

	// One checkpoint round: decide to checkpoint, then vote to commit.
	vote := wire.AppendVote(nil, "bench", true)
	for seq, kind := range []wire.Kind{wire.Decide, wire.Commit} {
		data := []byte{1}
		if kind == wire.Commit {
			data = vote
		}
		msgs := make([]wire.Msg, n)
		for r := range n {
			msgs[r] = &wire.Collective{Seq: uint64(seq + 1), Kind: kind, Contribs: []wire.Contrib{{Rank: int32(r), Data: data}}}
		}
		if err := phase(msgs, false, false, &p.RoundEvents, &roundS); err != nil {
			return p, fmt.Errorf("round: %w", err)
		}
	}
	if st := m.Status(); st.Committed != "bench" || j.got[wire.TypeResult] != 2*n {
		return p, fmt.Errorf("round: coordinator %+v, %d results for %d ranks × 2 collectives", st, j.got[wire.TypeResult], n)
	}

	// The memory of the job at rest: every rank joined, the round done.
	j.queue = nil
	// Signed: at a few ranks, the noise of a collection may exceed them.
	p.HeapBytes = float64(heapNow()) - float64(base)
	p.HeapBytesPerRank = p.HeapBytes / float64(n)

	// A tick of every machine, each connection due a heartbeat.
	conns := p.Conns
	for _, relay := range j.relays {
		conns += relay.Status().Conns
	}
	start, before := startClock(), j.events
	now := coord.DefaultHeartbeatTimeout / 2
	j.fromCoord(m.Tick(now))
	for i, relay := range j.relays {
		j.fromRelay(i, relay.Tick(now))
	}
	j.drain()
	tickS := start.cpu()
	wall += start.wall()
	p.TickNsPerConn = tickS * 1e9 / float64(conns)
	tickEvents := j.events - before
	if j.err != nil {
		return p, fmt.Errorf("tick: %w", j.err)
	}

	// Leave: every rank leaves and disconnects.
	leaves := make([]wire.Msg, n)
	for r := range n {
		leaves[r] = &wire.Leave{Ranks: []int32{int32(r)}}
	}
	if err := phase(leaves, false, true, &p.LeaveEvents, &leaveS); err != nil {
		return p, fmt.Errorf("leave: %w", err)
	}
	if st := m.Status(); st.Phase != coord.Finished || st.Conns != 0 {
		return p, fmt.Errorf("leave: coordinator %+v, want finished without connections", st)
	}

	p.Events = p.JoinEvents + p.RoundEvents + p.LeaveEvents + tickEvents
	p.CoordEvents = j.coordN
	p.Seconds = joinS + roundS + leaveS + tickS
	p.WallSeconds = wall
	p.NsPerEvent = p.Seconds * 1e9 / float64(p.Events)
	p.JoinNsPerEvent = joinS * 1e9 / float64(p.JoinEvents)
	p.RoundNsPerEvent = roundS * 1e9 / float64(p.RoundEvents)
	p.LeaveNsPerEvent = leaveS * 1e9 / float64(p.LeaveEvents)
	runtime.KeepAlive(j)
	return p, nil
}

// simClock measures a phase in CPU time of the process and in elapsed
// time.
type simClock struct {
	start time.Time
	cpu0  float64
}

func startClock() simClock { return simClock{start: time.Now(), cpu0: processCPU()} }

func (c simClock) cpu() float64  { return processCPU() - c.cpu0 }
func (c simClock) wall() float64 { return time.Since(c.start).Seconds() }

// processCPU is the CPU time of this process so far, in seconds, user and
// system, every thread.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic("getrusage: " + err.Error()) // cannot fail with these arguments
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// heapNow is the bytes of live heap objects after a collection.
func heapNow() uint64 {
	runtime.GC() // twice: the first may leave objects freed by finalizers
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
