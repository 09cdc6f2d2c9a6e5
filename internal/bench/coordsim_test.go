package bench

import (
	"math"
	"strings"
	"testing"
)

// The simulation runs a job at two small sizes, flat and tree: every
// figure is measured, and the slopes are those of the measurements.
func TestCoordSim(t *testing.T) {
	var steps []string
	r, err := RunCoordSim(CoordSimConfig{Ranks: []int{2000, 200}, PerNode: 16,
		Progress: func(s string) { steps = append(steps, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 4 || len(steps) != 4 {
		t.Fatalf("points %+v, progress %q: want flat and tree at 200 and 2000 ranks", r.Points, steps)
	}
	for i, p := range r.Points {
		mode, n := []string{"flat", "flat", "tree", "tree"}[i], []int{200, 2000, 200, 2000}[i]
		if p.Mode != mode || p.Ranks != n {
			t.Fatalf("point %d is %s at %d ranks, want %s at %d", i, p.Mode, p.Ranks, mode, n)
		}
		conns := n
		if mode == "tree" {
			conns = (n + 15) / 16
		}
		// Flat: connect, Hello, two contributions, Leave and disconnect
		// per rank, and a tick; the tree has more (its relays').
		if p.Conns != conns || p.Events < 6*n+1 || p.CoordEvents > p.Events ||
			p.JoinEvents+p.RoundEvents+p.LeaveEvents >= p.Events {
			t.Errorf("point %+v: wrong connection or event counts", p)
		}
		if mode == "flat" && p.CoordEvents != p.Events {
			t.Errorf("flat point %+v: every event is the coordinator's", p)
		}
		if mode == "tree" && p.CoordEvents >= 2*n {
			t.Errorf("tree point %+v: the coordinator handles per-node events, not per-rank", p)
		}
		for _, f := range []float64{p.Seconds, p.NsPerEvent, p.JoinNsPerEvent, p.RoundNsPerEvent, p.LeaveNsPerEvent, p.TickNsPerConn, p.HeapBytes, p.WallSeconds, p.FloorNsPerEvent} {
			if !(f > 0) || math.IsInf(f, 0) {
				t.Errorf("point %+v: want every figure finite and positive", p)
			}
		}
		if math.Abs(p.NsPerEvent-p.Seconds*1e9/float64(p.Events)) > 1e-6*p.NsPerEvent ||
			p.HeapBytesPerRank != p.HeapBytes/float64(n) || p.Runs < 2 || p.EventCostRatio != p.NsPerEvent/p.FloorNsPerEvent {
			t.Errorf("point %+v: figures disagree", p)
		}
	}
	if len(r.Slopes) != 2 {
		t.Fatalf("slopes %+v: want one per mode", r.Slopes)
	}
	ok := true
	for k, s := range r.Slopes {
		a, b := r.Points[2*k], r.Points[2*k+1]
		x := math.Log(10)
		if s.Mode != a.Mode || s.FromRanks != 200 || s.ToRanks != 2000 ||
			math.Abs(s.EventCostSlope-math.Log(b.EventCostRatio/a.EventCostRatio)/x) > 1e-9 ||
			math.Abs(s.NsPerEventSlope-math.Log(b.NsPerEvent/a.NsPerEvent)/x) > 1e-9 ||
			math.Abs(s.FloorSlope-math.Log(b.FloorNsPerEvent/a.FloorNsPerEvent)/x) > 1e-9 ||
			math.Abs(s.MemorySlope-math.Log(b.HeapBytes/a.HeapBytes)/x) > 1e-9 ||
			s.OK != (s.EventCostSlope <= MaxEventCostSlope && s.MemorySlope <= MaxMemorySlope && min(a.HeapBytes, b.HeapBytes) > 0) {
			t.Errorf("slope %+v does not follow from %+v and %+v", s, a, b)
		}
		ok = ok && s.OK
	}
	if r.OK != ok {
		t.Errorf("OK = %v, slopes say %v", r.OK, ok)
	}
	if !strings.Contains(steps[0], "flat") || !strings.Contains(steps[3], "tree") {
		t.Errorf("progress %q", steps)
	}
}

// The checks fail a cost per event that grows with the ranks (an O(n)
// scan per event) and memory that grows faster than the ranks, and pass
// a flat cost with linear memory.
func TestCoordSimSlopes(t *testing.T) {
	pts := func(cost func(n float64) float64, mem func(n float64) float64) []CoordSimPoint {
		var out []CoordSimPoint
		for _, n := range []int{1000, 10000, 100000} {
			// A floor that grows with the size, as beyond the caches:
			// the check is on the ratio.
			floor := 20 * math.Pow(float64(n)/1000, 0.3)
			c := cost(float64(n)) * floor / 20
			out = append(out, CoordSimPoint{Mode: "flat", Ranks: n, NsPerEvent: c, FloorNsPerEvent: floor,
				EventCostRatio: c / floor, HeapBytes: mem(float64(n))})
		}
		return out
	}
	constant := func(float64) float64 { return 300 }
	linear := func(n float64) float64 { return 5e4 + 200*n }
	for _, c := range []struct {
		name      string
		cost, mem func(float64) float64
		ok        bool
	}{
		{"flat cost, linear memory", constant, linear, true},
		{"O(n) scan per event", func(n float64) float64 { return 300 + n }, linear, false},
		{"quadratic memory", constant, func(n float64) float64 { return n * n }, false},
		{"zero measurement", func(float64) float64 { return 0 }, linear, false},
		{"no heap measured (noise at a few ranks)", constant, func(float64) float64 { return -100 }, false},
	} {
		slopes, ok := CoordSimSlopes(pts(c.cost, c.mem))
		if ok != c.ok || len(slopes) != 2 {
			t.Errorf("%s: ok %v with slopes %+v, want %v", c.name, ok, slopes, c.ok)
		}
	}
	// Sizes of different modes are not compared.
	p := pts(constant, linear)
	p[1].Mode = "tree"
	if slopes, _ := CoordSimSlopes(p); len(slopes) != 0 {
		t.Errorf("slopes across modes: %+v", slopes)
	}
}

func TestCoordSimBadConfig(t *testing.T) {
	for _, cfg := range []CoordSimConfig{{Ranks: []int{100}}, {PerNode: 4}, {Ranks: []int{0, 10}, PerNode: 4}} {
		if _, err := RunCoordSim(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
