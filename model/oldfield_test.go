package model

import (
	"math"
	"testing"
)

// 000 Table 1. The text of §3.2 gives other bisection bandwidths for Red
// Storm (1.8 TB/s) and Jaguar (1.4 TB/s peak); the presets follow the table.
func TestMPPSystemsTable1(t *testing.T) {
	want := []struct {
		name                          string
		nodes, cores                  int
		mem, storage, bisection, link float64
	}{
		{"red-storm", 12960, 2, 1e9, 50e9, 2.3e12, 4.8e9},
		{"bluegene-l", 65536, 2, 0.25e9, 45e9, 360e9, 1.4e9},
		{"jaguar", 11590, 2, 2.0e9, 45e9, 1.8e12, 3.8e9},
		{"petaflop", 50000, 2, 2.5e9, 500e9, 30e12, 40e9},
	}
	if len(MPPSystems) != len(want) {
		t.Errorf("%d presets, want %d", len(MPPSystems), len(want))
	}
	fiveYears := 5 * 365 * 24 * 3600.0 // 157 680 000 s (§3.2.5: a 365-day year)
	for _, w := range want {
		s, err := LookupMPPSystem(w.name)
		if err != nil {
			t.Errorf("%s: %v", w.name, err)
			continue
		}
		if s.Nodes != w.nodes || s.CoresPerNode != w.cores || s.MemPerProc != w.mem ||
			s.StorageBW != w.storage || s.BisectionBW != w.bisection || s.LinkBW != w.link || s.ProcMTTI != fiveYears {
			t.Errorf("%s = %+v, want %+v and M_dev = %g", w.name, s, w, fiveYears)
		}
		if s.Procs() != w.nodes*w.cores {
			t.Errorf("%s: Procs() = %d, want %d", w.name, s.Procs(), w.nodes*w.cores)
		}
		// Input: d is half a processor's memory, M = M_dev/n (§3.2).
		in := s.Input(1000, StoragePFS)
		if in.Procs != 1000 || in.BytesPerProc != w.mem/2 || in.MTTI != fiveYears/1000 || in.Startup != 0 ||
			in.LinkBW != w.link || in.BisectionBW != w.bisection || in.StorageBW != w.storage || in.OverlayBytes != 0 {
			t.Errorf("%s: Input(1000, pfs) = %+v", w.name, in)
		}
	}
	if _, err := LookupMPPSystem("red storm"); err == nil {
		t.Error("LookupMPPSystem(\"red storm\"): no error")
	}
}

// LWFS start-up α_c = n/60000 s (000 §4.1); PFS start-up 0.
func TestStorageStartup(t *testing.T) {
	for _, n := range []int{1, 60, 1000, 60000, 131072} {
		if got := StorageLWFS.Startup(n); got != float64(n)/60000 {
			t.Errorf("LWFS startup(%d) = %g, want %g", n, got, float64(n)/60000)
		}
		if got := StoragePFS.Startup(n); got != 0 {
			t.Errorf("PFS startup(%d) = %g, want 0", n, got)
		}
	}
	s, _ := LookupMPPSystem("red-storm")
	checkRel(t, "Input(6000, lwfs).Startup", s.Input(6000, StorageLWFS).Startup, 0.1, 1e-15)
}

// 000 §3.3 and Fig. 3: "for any job executing on more than 32 compute-node
// processors, the execution time of a checkpoint operation is governed by
// storage system performance"; "never bound by the bisection bandwidth".
func TestOldfieldBounds(t *testing.T) {
	for _, s := range MPPSystems {
		for _, storage := range []Storage{StoragePFS, StorageLWFS} {
			for _, n := range powersOfTwo(6, 17) { // 64 … 131072
				res, err := Oldfield(s.Input(n, storage))
				if err != nil {
					t.Fatal(err)
				}
				if res.Bound != BoundStorage {
					t.Errorf("%s %s n=%d: bound %s, want storage", s.Name, storage, n, res.Bound)
				}
				checkRel(t, "perceived bandwidth = β_s", res.Bandwidth, s.StorageBW, 1e-12)
			}
			for _, n := range powersOfTwo(0, 17) {
				res, err := Oldfield(s.Input(n, storage))
				if err != nil {
					t.Fatal(err)
				}
				if res.Bound == BoundBisection {
					t.Errorf("%s %s n=%d: bisection-bound without an overlay", s.Name, storage, n)
				}
				if !math.IsNaN(res.K) || !math.IsNaN(res.IntervalLowerBound) {
					t.Errorf("%s n=%d: K = %g, τ_lb = %g without an overlay, want NaN", s.Name, n, res.K, res.IntervalLowerBound)
				}
			}
		}
	}
	// BlueGene/L at n = 32: nβ_L = 32·1.4 GB/s = 44.8 GB/s < β_s = 45 GB/s: link-bound.
	// δ = nd/β = 32·0.125e9/44.8e9 = 4/44.8 = 0.0892857… s.
	bgl, _ := LookupMPPSystem("bluegene-l")
	res, err := Oldfield(bgl.Input(32, StoragePFS))
	if err != nil {
		t.Fatal(err)
	}
	if res.Bound != BoundLink {
		t.Errorf("BlueGene/L n=32: bound %s, want link", res.Bound)
	}
	checkRel(t, "BlueGene/L n=32 δ", res.Delta, 4/44.8, 1e-14)
	checkRel(t, "BlueGene/L n=32 bandwidth", res.Bandwidth, 44.8e9, 1e-14)
}

// δ = α_c + nd/β, τ = eq. 2, fraction δ/(τ+δ), efficiency eq. 1 with R = 0,
// by hand for Red Storm at n = 1024.
func TestOldfieldDeltaByHand(t *testing.T) {
	rs, _ := LookupMPPSystem("red-storm")
	// nd = 1024·0.5e9 = 5.12e11 B; β = min(1024·4.8e9 = 4.9152e12, 2.3e12, 50e9) = 50e9 → δ = 10.24 s.
	// M = 157 680 000/1024 = 153 984.375 s.
	res, err := Oldfield(rs.Input(1024, StoragePFS))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "δ (PFS)", res.Delta, 10.24, 1e-14)
	M := 153984.375
	// Daly eq. 2 by hand: x = δ/2M = 10.24/307968.75 = 3.325e-5, √(2δM) = √3153600 = 1775.838…
	x := 10.24 / (2 * M)
	tau := math.Sqrt(2*10.24*M)*(1+math.Sqrt(x)/3+x/9) - 10.24
	checkRel(t, "τ_opt-D", res.DalyInterval, tau, 1e-14)
	if res.Interval != res.DalyInterval {
		t.Errorf("without overlay τ_opt = %g, want τ_opt-D = %g", res.Interval, res.DalyInterval)
	}
	checkRel(t, "checkpoint fraction", res.CheckpointFraction, 10.24/(tau+10.24), 1e-14)
	checkRel(t, "efficiency", res.Efficiency, tau/(M*math.Expm1((tau+10.24)/M)), 1e-12)

	// LWFS adds α_c = 1024/60000 = 0.0170667 s and leaves the perceived bandwidth at 50 GB/s.
	res, err = Oldfield(rs.Input(1024, StorageLWFS))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "δ (LWFS)", res.Delta, 10.24+1024.0/60000, 1e-14)
	checkRel(t, "bandwidth (LWFS)", res.Bandwidth, 50e9, 1e-12)
}

// 000 §3.3 / §6: PFS checkpoint fraction below 10% up to 8K processors on
// every system, above 50% at 128K on at least one; "an application that
// executes on 64K processors can achieve no better than 70% efficiency, even
// on the hypothetical petaflop system".
func TestOldfieldPFSClaims(t *testing.T) {
	over50 := 0
	for _, s := range MPPSystems {
		for _, n := range powersOfTwo(0, 13) { // 1 … 8192
			res, err := Oldfield(s.Input(n, StoragePFS))
			if err != nil {
				t.Fatal(err)
			}
			if !(res.CheckpointFraction < 0.10) {
				t.Errorf("%s n=%d: checkpoint fraction %.4f, want < 10%%", s.Name, n, res.CheckpointFraction)
			}
		}
		res, err := Oldfield(s.Input(131072, StoragePFS))
		if err != nil {
			t.Fatal(err)
		}
		if res.CheckpointFraction > 0.5 {
			over50++
		}
		// The fraction grows with n.
		prev := 0.0
		for _, n := range powersOfTwo(6, 17) {
			r, _ := Oldfield(s.Input(n, StoragePFS))
			if !(r.CheckpointFraction > prev) {
				t.Errorf("%s n=%d: fraction %.4f not above %.4f", s.Name, n, r.CheckpointFraction, prev)
			}
			prev = r.CheckpointFraction
		}
	}
	if over50 == 0 {
		t.Error("no system spends more than 50% of its time checkpointing at 131072 processors")
	}
	pf, _ := LookupMPPSystem("petaflop")
	res, err := Oldfield(pf.Input(65536, StoragePFS))
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Efficiency < 0.70) || !(res.Efficiency > 0) {
		t.Errorf("petaflop n=65536: efficiency %.4f, want < 0.70", res.Efficiency)
	}
}

// overlayInput is 000 §4.3's LWFS+overlay setting: 1024 overlay processors,
// each with twice a compute processor's memory.
func overlayInput(s MPPSystem, n int) OldfieldInput {
	in := s.Input(n, StorageLWFS)
	in.OverlayBytes = 1024 * 2 * s.MemPerProc
	return in
}

func TestOldfieldOverlay(t *testing.T) {
	rs, _ := LookupMPPSystem("red-storm")

	// By hand, Red Storm n = 4096: μ = 2.048e12 B, nd = 4096·0.5e9 = 2.048e12 B,
	// β_N = min(4096·4.8e9 = 1.966e13, 2.3e12) = 2.3e12 (bisection),
	// k = μ/(1 − 50/2300) = 2.048e12·2300/2250 = 2.0935111e12 ≥ nd →
	// δ = 4096/60000 + 2.048e12/2.3e12 = 0.0682667 + 0.8904348 = 0.9587014 s,
	// τ_lb = (μ/β_s)·min(1, nd/k) = 40.96·2250/2300 = 40.0695652 s < τ_opt-D.
	res, err := Oldfield(overlayInput(rs, 4096))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "k", res.K, 2.048e12*2300/2250, 1e-14)
	checkRel(t, "δ", res.Delta, 4096.0/60000+2.048e12/2.3e12, 1e-14)
	checkRel(t, "τ_lb", res.IntervalLowerBound, 40.96*2250/2300, 1e-14)
	if res.Bound != BoundBisection {
		t.Errorf("n=4096 with overlay: bound %s, want bisection (network-bound, βN = β_n)", res.Bound)
	}
	checkRel(t, "τ_opt-D", res.DalyInterval, Daly(res.Delta, rs.ProcMTTI/4096), 1e-15)
	if res.Interval != math.Max(res.DalyInterval, res.IntervalLowerBound) || res.Interval != res.DalyInterval {
		t.Errorf("τ_opt = %g, want max(%g, %g)", res.Interval, res.DalyInterval, res.IntervalLowerBound)
	}

	// Storage-bound with overlay, n = 16384: nd = 8.192e12 > k →
	// δ = 16384/60000 + k/2.3e12 + (8.192e12 − k)/50e9, τ_lb = μ/β_s = 40.96 s.
	k := 2.048e12 * 2300 / 2250
	res, err = Oldfield(overlayInput(rs, 16384))
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "δ (n=16384)", res.Delta, 16384.0/60000+k/2.3e12+(8.192e12-k)/50e9, 1e-13)
	checkRel(t, "τ_lb (n=16384)", res.IntervalLowerBound, 40.96, 1e-14)
	if res.Bound != BoundStorage {
		t.Errorf("n=16384 with overlay: bound %s, want storage", res.Bound)
	}

	// With β_s ≥ β_N (few processors: 2·4.8 GB/s < 50 GB/s) the overlay never
	// fills: k = +Inf, τ_lb = 0, link-bound.
	res, err = Oldfield(overlayInput(rs, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(res.K, 1) || res.IntervalLowerBound != 0 || res.Bound != BoundLink {
		t.Errorf("n=2 with overlay: k = %g, τ_lb = %g, bound %s; want +Inf, 0, link", res.K, res.IntervalLowerBound, res.Bound)
	}
	checkRel(t, "δ (n=2)", res.Delta, 2.0/60000+1e9/9.6e9, 1e-14)

	// τ_opt = max(τ_opt-D, τ_lb) when the lower bound wins. By hand: n = 1000,
	// d = 1e9 (nd = 1e12), β_L = 1e10, β_n = 1e12, β_s = 1e10, M = 1000, μ = 1e12, α_c = 0:
	// β_N = min(1e13, 1e12) = 1e12, k = 1e12/(1 − 0.01) = 1.0101e12 ≥ nd → δ = 1e12/1e12 = 1 s;
	// τ_opt-D = √2000(1 + √(1/2000)/3 + 1/18000) − 1 = 44.056 s; τ_lb = 100·min(1, 0.99) = 99 s.
	custom := OldfieldInput{Procs: 1000, BytesPerProc: 1e9, LinkBW: 1e10, BisectionBW: 1e12, StorageBW: 1e10, MTTI: 1000, OverlayBytes: 1e12}
	res, err = Oldfield(custom)
	if err != nil {
		t.Fatal(err)
	}
	checkRel(t, "custom δ", res.Delta, 1, 1e-15)
	checkRel(t, "custom τ_opt-D", res.DalyInterval, math.Sqrt(2000)*(1+math.Sqrt(1.0/2000)/3+1.0/18000)-1, 1e-14)
	checkRel(t, "custom τ_lb", res.IntervalLowerBound, 99, 1e-14)
	checkRel(t, "custom τ_opt = τ_lb", res.Interval, 99, 1e-14)
	checkRel(t, "custom fraction", res.CheckpointFraction, 0.01, 1e-14)                // 1/(99 + 1)
	checkRel(t, "custom efficiency", res.Efficiency, 99/(1000*math.Expm1(0.1)), 1e-12) // eq. 1, R = 0
}

// 000 §4.3: "Below 8K processors, LWFS+overlay reduces the checkpoint
// overhead to less than 1% of the total application execution time. At 16K
// processors, checkpoint data exhausts the memory in the overlay network".
func TestOldfieldOverlayClaims(t *testing.T) {
	rs, _ := LookupMPPSystem("red-storm")
	for _, n := range powersOfTwo(1, 12) { // 2 … 4096
		res, err := Oldfield(overlayInput(rs, n))
		if err != nil {
			t.Fatal(err)
		}
		if !(res.CheckpointFraction < 0.01) {
			t.Errorf("red-storm overlay n=%d: fraction %.5f, want < 1%%", n, res.CheckpointFraction)
		}
	}
	res, err := Oldfield(overlayInput(rs, 16384))
	if err != nil {
		t.Fatal(err)
	}
	if !(res.CheckpointFraction > 0.01) {
		t.Errorf("red-storm overlay n=16384: fraction %.5f, want > 1%%", res.CheckpointFraction)
	}

	// Fig. 10's relative difference (P_fs − P_overlay)/P_fs is positive
	// wherever the PFS checkpoint is storage-bound (n ≥ 64), on every system.
	for _, s := range MPPSystems {
		for _, n := range powersOfTwo(6, 17) {
			fs, err1 := Oldfield(s.Input(n, StoragePFS))
			ov, err2 := Oldfield(overlayInput(s, n))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			rel := (fs.CheckpointFraction - ov.CheckpointFraction) / fs.CheckpointFraction
			if !(rel > 0) {
				t.Errorf("%s n=%d: relative difference %.4f, want > 0", s.Name, n, rel)
			}
		}
	}
	// Where the network, not storage, is the bottleneck (Red Storm n = 2:
	// 9.6 GB/s < 50 GB/s) the overlay cannot help and LWFS adds α_c = 2/60000 s,
	// so the relative difference is negative there.
	fs, _ := Oldfield(rs.Input(2, StoragePFS))
	ov, _ := Oldfield(overlayInput(rs, 2))
	if !(ov.CheckpointFraction > fs.CheckpointFraction) {
		t.Errorf("red-storm n=2: overlay fraction %g not above PFS %g", ov.CheckpointFraction, fs.CheckpointFraction)
	}
}

func TestOldfieldValidate(t *testing.T) {
	rs, _ := LookupMPPSystem("red-storm")
	ok := overlayInput(rs, 64)
	if _, err := Oldfield(ok); err != nil {
		t.Fatal(err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		mod   func(*OldfieldInput)
		param string
	}{
		{"procs 0", func(in *OldfieldInput) { in.Procs = 0 }, "procs"},
		{"procs negative", func(in *OldfieldInput) { in.Procs = -5 }, "procs"},
		{"bytes 0", func(in *OldfieldInput) { in.BytesPerProc = 0 }, "bytes-per-proc"},
		{"negative link bandwidth", func(in *OldfieldInput) { in.LinkBW = -1 }, "link-bw"},
		{"NaN bisection bandwidth", func(in *OldfieldInput) { in.BisectionBW = nan }, "bisection-bw"},
		{"zero storage bandwidth", func(in *OldfieldInput) { in.StorageBW = 0 }, "storage-bw"},
		{"Inf mtti", func(in *OldfieldInput) { in.MTTI = inf }, "mtti"},
		{"negative startup", func(in *OldfieldInput) { in.Startup = -1 }, "startup"},
		{"negative overlay", func(in *OldfieldInput) { in.OverlayBytes = -1 }, "overlay-bytes"},
		{"NaN overlay", func(in *OldfieldInput) { in.OverlayBytes = nan }, "overlay-bytes"},
	}
	for _, c := range cases {
		in := ok
		c.mod(&in)
		_, err := Oldfield(in)
		checkParamErr(t, c.name, err, c.param)
	}
}
