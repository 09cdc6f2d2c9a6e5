package main

import (
	"math"
	"strings"
	"testing"
)

// TestPlanBuiltinsJSON plans every built-in system.
func TestPlanBuiltinsJSON(t *testing.T) {
	for _, name := range []string{"tsubame2", "red-storm", "bluegene-l", "jaguar", "petaflop"} {
		t.Run(name, func(t *testing.T) {
			obj := runJSON(t, "plan", "--system", name, "--json")
			checkPlanJSON(t, obj)
			if obj["source"] != "built-in "+name {
				t.Errorf("source = %v", obj["source"])
			}
			rec := getObj(t, obj, "recommended")
			if name == "tsubame2" {
				if rec["redundancy"] != "xor:16" || rec["flush"] != "nonblocking" || rec["failure_domain"] != "rack" {
					t.Errorf("tsubame2 recommends %v", rec["name"])
				}
				if e := getNum(t, rec, "efficiency"); math.Abs(e-0.9411) > 5e-5 {
					t.Errorf("tsubame2 efficiency %.5f, README prints 0.9411", e)
				}
			} else if rec["shared_unused"] != true {
				// 000's systems have node failures only: no failure needs the shared tier.
				t.Errorf("%s: recommended %v has shared_unused %v", name, rec["name"], rec["shared_unused"])
			}
		})
	}
}

// checkPlanJSON checks the shape of ckpt plan --json.
func checkPlanJSON(t *testing.T, obj map[string]any) {
	t.Helper()
	for _, k := range []string{"system", "source", "nodes", "checkpoint_bytes", "failures", "recommended", "alternatives"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	rec := getObj(t, obj, "recommended")
	if e := getNum(t, rec, "efficiency"); !(e > 0 && e <= 1) {
		t.Errorf("recommended.efficiency = %g, want (0, 1]", e)
	}
	for _, k := range []string{"name", "levels", "flush", "efficiency", "interval_seconds", "counts", "expected_seconds", "shared_unused"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("recommended lacks %q", k)
		}
	}
	if _, ok := rec["counts"].([]any); !ok {
		t.Errorf("recommended.counts = %v, want a list", rec["counts"])
	}
	alts, ok := obj["alternatives"].([]any)
	if !ok || len(alts) == 0 {
		t.Fatalf("alternatives = %v", obj["alternatives"])
	}
	prev := math.Inf(1)
	found := false
	for i, a := range alts {
		ao, ok := a.(map[string]any)
		if !ok {
			t.Fatalf("alternatives[%d] = %v", i, a)
		}
		if ao["name"] == rec["name"] {
			found = true
		}
		e, ok := toFloat(ao["efficiency"])
		if !ok {
			t.Errorf("alternatives[%d] (%v): efficiency %v, error %v", i, ao["name"], ao["efficiency"], ao["error"])
			continue
		}
		if e > prev {
			t.Errorf("alternatives not sorted best first at %d: %g after %g", i, e, prev)
		}
		prev = e
	}
	if !found {
		t.Errorf("recommended %v is not among the alternatives", rec["name"])
	}
}

// TestPlanSatoFileJSON plans a system file and checks the numbers of
// SPEC-markov §8 and the target answer.
func TestPlanSatoFileJSON(t *testing.T) {
	obj := runJSON(t, "plan", "--system", "testdata/sato.yaml", "--target-efficiency", "0.9", "--json")
	checkPlanJSON(t, obj)
	if obj["source"] != "testdata/sato.yaml" {
		t.Errorf("source = %v", obj["source"])
	}
	checkRel(t, "checkpoint_bytes", getNum(t, obj, "checkpoint_bytes"), 1408*29e9, 1e-15)
	alts := obj["alternatives"].([]any)
	if len(alts) != 3 {
		t.Fatalf("%d alternatives, want 3", len(alts))
	}
	effs := map[string]float64{}
	for _, a := range alts {
		ao := a.(map[string]any)
		effs[ao["flush"].(string)+"/"+strings.Join(strings.Fields(ao["name"].(string))[:2], " ")] = getNum(t, ao, "efficiency")
	}
	if e := effs["blocking/cache xor:8"]; math.Abs(e-0.82731) > 5e-6 {
		t.Errorf("blocking %.7f, want 0.82731 (have %v)", e, effs)
	}
	if e := effs["nonblocking/cache xor:8"]; math.Abs(e-0.92735) > 5e-6 {
		t.Errorf("non-blocking %.7f, want 0.92735 (have %v)", e, effs)
	}
	rec := getObj(t, obj, "recommended")
	if rec["flush"] != "nonblocking" || getNum(t, rec, "flush_latency_seconds") != 6380 || getNum(t, rec, "alpha") != 0.00184 {
		t.Errorf("recommended = %v", rec)
	}
	tg := getObj(t, obj, "target")
	for _, k := range []string{"efficiency", "required_shared_bandwidth_blocking", "required_shared_bandwidth_nonblocking", "alpha"} {
		if _, ok := tg[k]; !ok {
			t.Errorf("target lacks %q", k)
		}
	}
	b, nb := getNum(t, tg, "required_shared_bandwidth_blocking"), getNum(t, tg, "required_shared_bandwidth_nonblocking")
	if !(nb > 0 && nb <= b) {
		t.Errorf("required bandwidths: blocking %g, non-blocking %g", b, nb)
	}
	if !(b > 8e9) || !(nb < 8e9) {
		t.Errorf("at 8 GB/s blocking reaches 0.827 and non-blocking 0.927: want blocking %g > 8e9 > non-blocking %g", b, nb)
	}
}

func TestPlanTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, "plan", "--system", "testdata/small-system.yaml")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"System: small test system", "Alternatives, best first", "Recommended:", "shared tier only", "expected efficiency"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// --all lists at least as many rows.
	code, all, _ := runCLI(t, "plan", "--system", "testdata/small-system.yaml", "--all")
	if code != exitOK || strings.Count(all, "\n") < strings.Count(stdout, "\n") {
		t.Errorf("--all: exit %d, %d lines vs %d", code, strings.Count(all, "\n"), strings.Count(stdout, "\n"))
	}
	// A built-in name works with or without .yaml.
	for _, name := range []string{"red-storm", "red-storm.yaml"} {
		code, stdout, stderr := runCLI(t, "plan", "--system", name, "--target-efficiency", "0.9")
		if code != exitOK || !strings.Contains(stdout, "Red Storm") || stderr != "" {
			t.Errorf("--system %s: exit %d, stderr %q", name, code, stderr)
		}
		if !strings.Contains(stdout, "no failure category needs the shared tier") {
			t.Errorf("--system %s: the target answer should say the shared tier is not needed:\n%s", name, stdout)
		}
	}
}
