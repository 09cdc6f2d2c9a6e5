package main

import (
	"math"
	"testing"
)

// TestBenchCoordSimulateJSON runs `ckpt bench coord --simulate` small:
// every point is measured, and each slope and verdict is computed from
// the points' own figures against the bounds the report states.
func TestBenchCoordSimulateJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "coord", "--simulate", "--ranks", "3000,300", "--per-node", "16", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	obj := decodeOne(t, stdout)
	checkKeys(t, obj, []string{"per_node", "points", "slopes", "max_event_cost_slope", "max_memory_slope", "scaling_ok"}, nil,
		"points", "slopes", "scaling_ok")
	if getNum(t, obj, "per_node") != 16 {
		t.Errorf("per_node = %v", obj["per_node"])
	}
	points := simObjects(t, obj, "points")
	if len(points) != 4 {
		t.Fatalf("%d points, want flat and tree at 300 and 3000 ranks", len(points))
	}
	for i, p := range points {
		checkKeys(t, p, []string{"ranks", "conns", "events", "coord_events", "cpu_seconds", "wall_seconds", "ns_per_event",
			"join_events", "join_ns_per_event", "round_events", "round_ns_per_event", "leave_events", "leave_ns_per_event",
			"tick_ns_per_conn", "heap_bytes", "heap_bytes_per_rank", "runs", "floor_ns_per_event", "event_cost_ratio", "mode"}, nil, "mode")
		mode, n := []string{"flat", "flat", "tree", "tree"}[i], []float64{300, 3000, 300, 3000}[i]
		if p["mode"] != mode || getNum(t, p, "ranks") != n {
			t.Fatalf("point %d: %v, want %s at %v ranks", i, p, mode, n)
		}
		conns := n
		if mode == "tree" {
			conns = math.Ceil(n / 16)
		}
		if getNum(t, p, "conns") != conns {
			t.Errorf("point %v: want %v connections", p, conns)
		}
		checkRel(t, "ns_per_event", getNum(t, p, "ns_per_event"), getNum(t, p, "cpu_seconds")*1e9/getNum(t, p, "events"), 1e-9)
		checkRel(t, "event_cost_ratio", getNum(t, p, "event_cost_ratio"), getNum(t, p, "ns_per_event")/getNum(t, p, "floor_ns_per_event"), 1e-9)
		checkRel(t, "heap_bytes_per_rank", getNum(t, p, "heap_bytes_per_rank"), getNum(t, p, "heap_bytes")/n, 1e-9)
		for _, k := range []string{"cpu_seconds", "wall_seconds", "heap_bytes", "join_ns_per_event", "round_ns_per_event", "leave_ns_per_event"} {
			if !(getNum(t, p, k) > 0) {
				t.Errorf("point %v: %s not positive", p, k)
			}
		}
	}
	maxCost, maxMem := getNum(t, obj, "max_event_cost_slope"), getNum(t, obj, "max_memory_slope")
	slopes := simObjects(t, obj, "slopes")
	if len(slopes) != 2 {
		t.Fatalf("%d slopes, want one per mode", len(slopes))
	}
	all := true
	for k, s := range slopes {
		a, b := points[2*k], points[2*k+1]
		checkKeys(t, s, []string{"from_ranks", "to_ranks", "event_cost_slope", "memory_slope", "ns_per_event_slope", "floor_slope", "mode", "ok"}, nil, "mode", "ok")
		if s["mode"] != a["mode"] || getNum(t, s, "from_ranks") != 300 || getNum(t, s, "to_ranks") != 3000 {
			t.Errorf("slope %v: want %v from 300 to 3000 ranks", s, a["mode"])
		}
		x := math.Log(10)
		slope := func(p string) float64 { return math.Log(getNum(t, b, p)/getNum(t, a, p)) / x }
		cost, mem := slope("event_cost_ratio"), slope("heap_bytes")
		checkRel(t, "event_cost_slope", getNum(t, s, "event_cost_slope"), cost, 1e-9)
		checkRel(t, "ns_per_event_slope", getNum(t, s, "ns_per_event_slope"), slope("ns_per_event"), 1e-9)
		checkRel(t, "floor_slope", getNum(t, s, "floor_slope"), slope("floor_ns_per_event"), 1e-9)
		checkRel(t, "memory_slope", getNum(t, s, "memory_slope"), mem, 1e-9)
		ok := cost <= maxCost && mem <= maxMem && min(getNum(t, a, "heap_bytes"), getNum(t, b, "heap_bytes")) > 0
		if s["ok"] != ok {
			t.Errorf("slope %v: ok should be %v", s, ok)
		}
		all = all && ok
	}
	if obj["scaling_ok"] != all {
		t.Errorf("scaling_ok = %v, the slopes say %v", obj["scaling_ok"], all)
	}
}

func TestBenchCoordSimulateBadInput(t *testing.T) {
	checkBadInput(t, []string{"--ranks"}, "bench", "coord", "--simulate", "--ranks", "0,10")
	checkBadInput(t, []string{"--ranks"}, "bench", "coord", "--ranks", "10")
	checkBadInput(t, []string{"--clients"}, "bench", "coord", "--simulate", "--clients", "10")
	checkBadInput(t, []string{"--netns"}, "bench", "coord", "--simulate", "--netns", "2")
	checkBadInput(t, []string{"--per-node"}, "bench", "coord", "--simulate", "--per-node", "0")
}

// simObjects reads an array of objects.
func simObjects(t *testing.T, obj map[string]any, key string) []map[string]any {
	t.Helper()
	list, ok := obj[key].([]any)
	if !ok {
		t.Fatalf("%s = %v, want an array", key, obj[key])
	}
	out := make([]map[string]any, len(list))
	for i, v := range list {
		if out[i], ok = v.(map[string]any); !ok {
			t.Fatalf("%s[%d] = %v, want an object", key, i, v)
		}
	}
	return out
}
