package torture

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The kinds of fault. Those that force a restart are recovered from a
// checkpoint; the others (a staging server's, the shared tier's) the job
// must ride out without losing committed work.
const (
	KillRank     Kind = "kill-rank"     // SIGKILL one rank process
	KillNode     Kind = "kill-node"     // SIGKILL a node's ranks and delete its cache
	KillLauncher Kind = "kill-launcher" // SIGKILL `ckpt run`; a new one resumes the job
	KillStage    Kind = "kill-stage"    // SIGKILL a staging server
	HangRank     Kind = "hang-rank"     // SIGSTOP one rank: the heartbeat timeout must catch it
	HangStage    Kind = "hang-stage"    // SIGSTOP a staging server for a while
	// Corruption flips bytes in one object of the newest checkpoint, then
	// kills a rank so that the restart must find it (ckpt hashes every byte).
	CorruptData           Kind = "corrupt-cache-data"
	CorruptParity         Kind = "corrupt-parity"
	CorruptCacheManifest  Kind = "corrupt-cache-manifest"
	CorruptSharedObject   Kind = "corrupt-shared-object"
	CorruptSharedManifest Kind = "corrupt-shared-manifest"
	// SharedDown replaces the shared tier's directory by a file for a
	// while: every write and read of the tier fails.
	SharedDown Kind = "shared-down"
	// Hostile plays the hostile client's attacks (internal/hostile)
	// against every listener of the job: coordinator, relays, peers and
	// staging servers. The job must ride them out, and every listener
	// hold.
	Hostile Kind = "hostile"
	// Network and disk faults, inside the job's sandbox (sandbox_linux.go):
	// CutNode destroys every TCP connection of one node's ranks;
	// PartitionNode drops every packet to or from them for a while;
	// DiskFull and SharedFull fill a node's cache's or the shared tier's
	// small file system for a while.
	CutNode       Kind = "cut-node"
	PartitionNode Kind = "partition-node"
	DiskFull      Kind = "disk-full"
	SharedFull    Kind = "shared-full"
)

// Kinds is every kind, in the order --help lists them.
var Kinds = []Kind{KillRank, KillNode, KillLauncher, KillStage, HangRank, HangStage,
	CorruptData, CorruptParity, CorruptCacheManifest, CorruptSharedObject, CorruptSharedManifest, SharedDown,
	CutNode, PartitionNode, DiskFull, SharedFull, Hostile}

// Restarts tells whether a fault of kind k ends the job's processes, so
// that the job recovers from a checkpoint.
func (k Kind) Restarts() bool {
	switch k {
	case KillStage, HangStage, SharedDown, Hostile:
		return false
	case CutNode, PartitionNode, DiskFull, SharedFull:
		return false
	}
	return true
}

// Lasts tells whether a fault of kind k that forces no restart lasts
// until Heal ends it (after Fault.Hold); the others are over at once.
func (k Kind) Lasts() bool { return !k.Restarts() && k != KillStage && k != CutNode && k != Hostile }

// NeedsStaging tells whether a fault of kind k needs staging servers.
func (k Kind) NeedsStaging() bool { return k == KillStage || k == HangStage }

// NeedsShared tells whether a fault of kind k needs a shared tier.
func (k Kind) NeedsShared() bool {
	return k == CorruptSharedObject || k == CorruptSharedManifest || k == SharedDown
}

// NeedsSandbox tells whether a fault of kind k needs the job to run in a
// sandbox of its own: a network and a mount namespace (root, Linux).
func (k Kind) NeedsSandbox() bool {
	return k == CutNode || k == PartitionNode || k == DiskFull || k == SharedFull
}

// ParseKinds reads a comma-separated list of kinds ("all": every kind).
func ParseKinds(s string) ([]Kind, error) {
	if strings.TrimSpace(s) == "all" || s == "" {
		return slices.Clone(Kinds), nil
	}
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown fault kind %q (kinds: %s)", k, kindList())
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Fault is one fault the schedule chose.
type Fault struct {
	Seq  int // 1, 2, ... in the campaign
	Kind Kind
	// Target is a rank (kill-rank, hang-rank, the rank whose file is
	// corrupted), a node (kill-node, corrupt-cache-manifest, cut-node,
	// partition-node, disk-full) or a staging
	// server; the runner reduces it modulo what the job has.
	Target int
	// After is how many checkpoints the job must have committed since it
	// last started or recovered; Delay then passes before the fault.
	After int
	Delay time.Duration
	// Hold is how long a fault that is healed lasts (hang-stage,
	// shared-down, partition-node, disk-full, shared-full).
	Hold time.Duration
	// Flip seeds which bytes a corruption flips (Flips of them).
	Flip  uint64
	Flips int
}

func (f Fault) String() string {
	return fmt.Sprintf("#%d %s target %d", f.Seq, f.Kind, f.Target)
}

// Topology is what the schedule draws targets from.
type Topology struct {
	Ranks, Nodes, StagingServers int
}

// Schedule is the seeded sequence of faults: the same seed, kinds and
// topology give the same faults, in order, wherever it runs.
type Schedule struct {
	rng   *rand.Rand
	kinds []Kind
	seq   int
}

// NewSchedule returns the schedule of seed over kinds (not empty).
func NewSchedule(seed uint64, kinds []Kind) *Schedule {
	return &Schedule{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), kinds: slices.Clone(kinds)}
}

// Next returns the next fault for a job of topology t. Every fault draws
// the same number of random values whatever its kind, so that the
// schedule's later faults do not depend on the kinds drawn before.
func (s *Schedule) Next(t Topology) Fault {
	s.seq++
	f := Fault{Seq: s.seq, Kind: s.kinds[s.rng.IntN(len(s.kinds))]}
	target := s.rng.IntN(1 << 16)
	f.After = 1 + s.rng.IntN(3)
	f.Delay = time.Duration(s.rng.IntN(200)) * time.Millisecond
	f.Hold = time.Duration(1000+s.rng.IntN(2000)) * time.Millisecond
	f.Flip = s.rng.Uint64()
	f.Flips = 1 + s.rng.IntN(4)
	if f.Kind == PartitionNode {
		// 2 to 6 s: against the default heartbeat timeout of 5 s, some
		// partitions are ridden out and some must be detected.
		f.Hold *= 2
	}
	switch f.Kind {
	case KillNode, CorruptCacheManifest, CutNode, PartitionNode, DiskFull:
		f.Target = target % max(t.Nodes, 1)
	case KillStage, HangStage:
		f.Target = target % max(t.StagingServers, 1)
	default:
		f.Target = target % max(t.Ranks, 1)
	}
	return f
}
