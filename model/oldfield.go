package model

import (
	"fmt"
	"math"
	"strings"
)

// Year is the year of the failure model of 000 §3.2.5: 365 days.
const Year = 365 * 24 * 3600.0

// LWFSStartupPerProc is the per-process start-up cost of lightweight object
// storage, α_c = n/60000 s (000 §4.1, from the object-creation rate of its Fig. 6c).
const LWFSStartupPerProc = 1.0 / 60000

// MPPSystem is one column of 000 Table 1, in decimal units.
type MPPSystem struct {
	Name         string
	Title        string
	Nodes        int
	CoresPerNode int
	MemPerProc   float64 // d_max, bytes of memory per processor
	StorageBW    float64 // β_s, bytes/s aggregate
	BisectionBW  float64 // β_n, bytes/s
	LinkBW       float64 // β_L, one-way bytes/s per link
	ProcMTTI     float64 // M_dev, seconds per processor
}

// Procs is n_max, the number of compute-node processors.
func (s MPPSystem) Procs() int { return s.Nodes * s.CoresPerNode }

// MPPSystems are the four systems of 000 Table 1.
var MPPSystems = []MPPSystem{
	{Name: "red-storm", Title: "Red Storm (SNL)", Nodes: 12960, CoresPerNode: 2, MemPerProc: 1e9, StorageBW: 50e9, BisectionBW: 2.3e12, LinkBW: 4.8e9, ProcMTTI: 5 * Year},
	{Name: "bluegene-l", Title: "BlueGene/L (LLNL)", Nodes: 65536, CoresPerNode: 2, MemPerProc: 0.25e9, StorageBW: 45e9, BisectionBW: 360e9, LinkBW: 1.4e9, ProcMTTI: 5 * Year},
	{Name: "jaguar", Title: "Jaguar (ORNL)", Nodes: 11590, CoresPerNode: 2, MemPerProc: 2.0e9, StorageBW: 45e9, BisectionBW: 1.8e12, LinkBW: 3.8e9, ProcMTTI: 5 * Year},
	{Name: "petaflop", Title: "Petaflop (Red Storm follow-on)", Nodes: 50000, CoresPerNode: 2, MemPerProc: 2.5e9, StorageBW: 500e9, BisectionBW: 30e12, LinkBW: 40e9, ProcMTTI: 5 * Year},
}

// LookupMPPSystem finds a 000 Table 1 system by name.
func LookupMPPSystem(name string) (MPPSystem, error) {
	var names []string
	for _, s := range MPPSystems {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return MPPSystem{}, fmt.Errorf("unknown system %q (use %s)", name, strings.Join(names, ", "))
}

// Storage is the kind of shared storage a checkpoint goes to.
type Storage string

const (
	StoragePFS  Storage = "pfs"  // a parallel file system; start-up cost 0 in 000's figures
	StorageLWFS Storage = "lwfs" // lightweight object storage, α_c = n/60000 s (000 §4.1)
)

// Startup is the storage's default start-up cost α_c for n processes.
func (s Storage) Startup(procs int) float64 {
	if s == StorageLWFS {
		return float64(procs) * LWFSStartupPerProc
	}
	return 0
}

// OldfieldInput is the input of 000's checkpoint overhead model.
type OldfieldInput struct {
	Procs        int     // n
	BytesPerProc float64 // d, checkpoint bytes per processor
	LinkBW       float64 // β_L, one processor link's one-way bandwidth
	BisectionBW  float64 // β_n
	StorageBW    float64 // β_s
	MTTI         float64 // M, the whole job's MTTI
	Startup      float64 // α_c
	OverlayBytes float64 // μ, memory of the overlay network; 0 for none
}

// Input is the model input for this system at n processes: d is half of a
// processor's memory and M = M_dev/n (000 §3.2).
func (s MPPSystem) Input(procs int, storage Storage) OldfieldInput {
	return OldfieldInput{
		Procs:        procs,
		BytesPerProc: s.MemPerProc / 2,
		LinkBW:       s.LinkBW,
		BisectionBW:  s.BisectionBW,
		StorageBW:    s.StorageBW,
		MTTI:         s.ProcMTTI / float64(procs),
		Startup:      storage.Startup(procs),
	}
}

// Validate checks the ranges of the overhead model's input.
func (in OldfieldInput) Validate() error {
	if in.Procs < 1 {
		return &ParamError{Param: "procs", Value: float64(in.Procs), Reason: "must be ≥ 1"}
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"bytes-per-proc", in.BytesPerProc}, {"link-bw", in.LinkBW}, {"bisection-bw", in.BisectionBW}, {"storage-bw", in.StorageBW}, {"mtti", in.MTTI}} {
		if err := positive(q.name, q.v); err != nil {
			return err
		}
	}
	if err := nonNegative("startup", in.Startup); err != nil {
		return err
	}
	return nonNegative("overlay-bytes", in.OverlayBytes)
}

// Bound names the bandwidth that limits a checkpoint.
type Bound string

const (
	BoundLink      Bound = "link"
	BoundBisection Bound = "bisection"
	BoundStorage   Bound = "storage"
)

// OldfieldResult is the checkpoint overhead and its consequences.
type OldfieldResult struct {
	Delta              float64 // δ, checkpoint overhead, seconds
	Bandwidth          float64 // perceived bandwidth n·d/(δ − α_c)
	Bound              Bound
	DalyInterval       float64 // τ_opt-D of 000 eq. 2
	Interval           float64 // τ_opt: τ_opt-D, or max(τ_opt-D, τ_lb) with an overlay
	CheckpointFraction float64 // δ/(τ+δ): the failure-free share of time spent checkpointing (000 Fig. 4)
	Efficiency         float64 // T_s/T of 000 eq. 1 with R = 0 at τ_opt
	// With an overlay only (NaN otherwise):
	K                  float64 // k = μ/(1 − β_s/β_N), bytes written at network rate; +Inf if β_s ≥ β_N
	IntervalLowerBound float64 // τ_lb of 000 eq. 4
}

// Oldfield evaluates 000's checkpoint overhead model (§3.1)
//
//	δ = α_c + nd/β,  β = min(nβ_L, β_n, β_s),
//
// or, with an overlay network buffer of μ bytes, eq. 3
//
//	δ = α_c + dn/β_N                     if dn ≤ k
//	δ = α_c + k/β_N + (dn − k)/β_s       if dn > k
//
// with β_N = min(nβ_L, β_n) and k = μ/(1 − β_s/β_N), the interval lower bound
// τ_lb = (μ/β_s) min(1, nd/k) (eq. 4) and τ_opt = max(τ_opt-D, τ_lb).
func Oldfield(in OldfieldInput) (OldfieldResult, error) {
	if err := in.Validate(); err != nil {
		return OldfieldResult{}, err
	}
	n := float64(in.Procs)
	data := n * in.BytesPerProc
	aggLink := n * in.LinkBW
	res := OldfieldResult{K: math.NaN(), IntervalLowerBound: math.NaN()}

	// βN and the bound it stands for.
	betaN, netBound := aggLink, BoundLink
	if in.BisectionBW < betaN {
		betaN, netBound = in.BisectionBW, BoundBisection
	}
	if in.OverlayBytes == 0 {
		beta, bound := betaN, netBound
		if in.StorageBW < beta {
			beta, bound = in.StorageBW, BoundStorage
		}
		res.Delta = in.Startup + data/beta
		res.Bound = bound
		res.DalyInterval = Daly(res.Delta, in.MTTI)
		res.Interval = res.DalyInterval
	} else {
		mu := in.OverlayBytes
		k := math.Inf(1)
		if in.StorageBW < betaN {
			k = mu / (1 - in.StorageBW/betaN)
		}
		res.K = k
		if data <= k {
			res.Delta = in.Startup + data/betaN
			res.Bound = netBound
		} else {
			res.Delta = in.Startup + k/betaN + (data-k)/in.StorageBW
			res.Bound = BoundStorage
		}
		res.IntervalLowerBound = mu / in.StorageBW * math.Min(1, data/k)
		res.DalyInterval = Daly(res.Delta, in.MTTI)
		res.Interval = math.Max(res.DalyInterval, res.IntervalLowerBound)
	}
	res.Bandwidth = data / (res.Delta - in.Startup)
	res.CheckpointFraction = res.Delta / (res.Interval + res.Delta)
	_, res.Efficiency = DalyRuntime(RuntimeInput{Work: res.Interval, Interval: res.Interval, Cost: res.Delta, MTTI: in.MTTI})
	return res, nil
}
