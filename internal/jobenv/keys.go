package jobenv

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/flushstats"
)

// Keys rank 0 publishes for the launcher in the coordinator's key–value
// service.
const (
	// KeyRestored: after Restart, where the rank restored from (Restored).
	KeyRestored = "ckpt/restored"
	// KeyResult: the job's result line, before rank 0 leaves (plain text).
	KeyResult = "ckpt/result"
	// KeyFlush: what the launch's flushes to the shared tier did
	// (FlushStats), after each one that fell due.
	KeyFlush = "ckpt/flush"
)

// KeyMsgLog is where every rank publishes, under the uncoordinated
// strategy, what its message logging cost (MsgLogStats): at each of its
// checkpoints and when it finishes, its earlier processes' in the launch
// included (a rank restarted alone adds its predecessor's last).
func KeyMsgLog(rank int) string { return "ckpt/msglog/" + strconv.Itoa(rank) }

// MsgLogStats is the payload of KeyMsgLog: one rank's time spent waiting
// for its received messages to be logged at its protector (Δ_lp, Fialho
// et al. 2011 §3.2) and replaying its log after a lone recovery (Δ_lr);
// the checkpoints it took alone and their time (t_c), and the checkpoints
// it loaded in lone recoveries and their time (t_l): what eq. 10 is fed.
type MsgLogStats struct {
	Protect, Replay time.Duration
	Checkpoints     int64
	CheckpointTime  time.Duration
	Loads           int64
	LoadTime        time.Duration
}

// Add sums two ranks' (or processes') statistics.
func (s MsgLogStats) Add(o MsgLogStats) MsgLogStats {
	return MsgLogStats{Protect: s.Protect + o.Protect, Replay: s.Replay + o.Replay,
		Checkpoints: s.Checkpoints + o.Checkpoints, CheckpointTime: s.CheckpointTime + o.CheckpointTime,
		Loads: s.Loads + o.Loads, LoadTime: s.LoadTime + o.LoadTime}
}

// Encode is "PROTECT REPLAY CHECKPOINTS CHECKPOINT-TIME LOADS LOAD-TIME",
// times in nanoseconds.
func (s MsgLogStats) Encode() []byte {
	f := []int64{int64(s.Protect), int64(s.Replay), s.Checkpoints, int64(s.CheckpointTime), s.Loads, int64(s.LoadTime)}
	parts := make([]string, len(f))
	for i, v := range f {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return []byte(strings.Join(parts, " "))
}

// DecodeMsgLogStats reads Encode's form, and its older form "PROTECT
// REPLAY" (the counts then zero).
func DecodeMsgLogStats(b []byte) (MsgLogStats, error) {
	f := strings.Fields(string(b))
	if len(f) != 2 && len(f) != 6 {
		return MsgLogStats{}, fmt.Errorf("message log statistics %q: want PROTECT REPLAY [CHECKPOINTS CHECKPOINT-TIME LOADS LOAD-TIME]", b)
	}
	v := make([]int64, 6)
	for i, x := range f {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil || n < 0 {
			return MsgLogStats{}, fmt.Errorf("message log statistics %q: want non-negative counts and nanosecond times", b)
		}
		v[i] = n
	}
	return MsgLogStats{Protect: time.Duration(v[0]), Replay: time.Duration(v[1]), Checkpoints: v[2],
		CheckpointTime: time.Duration(v[3]), Loads: v[4], LoadTime: time.Duration(v[5])}, nil
}

// KeyPeers is where every rank publishes, under the uncoordinated
// strategy, the ranks it exchanged messages with during its steps (a
// receive waits for its sender; a send to a rank that is recovering waits
// for it): who waits on whom, from which the launcher measures Fialho et
// al. 2011's dependency factor φ (eq. 12). Published with KeyMsgLog.
func KeyPeers(rank int) string { return "ckpt/peers/" + strconv.Itoa(rank) }

// EncodePeers is KeyPeers' payload: the ranks, comma-separated ("-" for
// none).
func EncodePeers(peers []int) []byte {
	if len(peers) == 0 {
		return []byte("-")
	}
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = strconv.Itoa(p)
	}
	return []byte(strings.Join(parts, ","))
}

// DecodePeers reads EncodePeers' form.
func DecodePeers(b []byte) ([]int, error) {
	if string(b) == "-" {
		return nil, nil
	}
	var peers []int
	for _, x := range strings.Split(string(b), ",") {
		p, err := strconv.Atoi(x)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("peers %q: want ranks, comma-separated, or -", b)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// KeyProc is where every rank publishes, as it joins, the process it runs
// in (Proc): a launcher that did not start the rank's process itself
// (mpirun, srun) finds it there to inject failures into it.
func KeyProc(rank int) string { return "ckpt/proc/" + strconv.Itoa(rank) }

// Proc is the payload of KeyProc: a rank's host and process id, and the
// name its launcher gives the host, if that differs.
type Proc struct {
	Host string
	PID  int
	// Node is the launcher's name for the host (Slurm's SLURMD_NODENAME,
	// what srun's --exclude takes), "" if none: several slurmd can run
	// on one host as nodes of their own names.
	Node string
}

// VarSlurmNode is the variable in which Slurm tells a task the name of
// its node.
const VarSlurmNode = "SLURMD_NODENAME"

// Where is the host a launcher knows the rank by: Node, else Host.
func (p Proc) Where() string {
	if p.Node != "" {
		return p.Node
	}
	return p.Host
}

// Encode is "HOST PID", or "HOST PID NODE" with a Node.
func (p Proc) Encode() []byte {
	s := p.Host + " " + strconv.Itoa(p.PID)
	if p.Node != "" {
		s += " " + p.Node
	}
	return []byte(s)
}

// DecodeProc reads Encode's form.
func DecodeProc(b []byte) (Proc, error) {
	f := strings.Split(string(b), " ")
	if len(f) < 2 || len(f) > 3 {
		return Proc{}, fmt.Errorf("rank process %q: want HOST PID [NODE]", b)
	}
	n, err := strconv.Atoi(f[1])
	if f[0] == "" || err != nil || n <= 0 || len(f) == 3 && f[2] == "" {
		return Proc{}, fmt.Errorf("rank process %q: want HOST PID [NODE]", b)
	}
	p := Proc{Host: f[0], PID: n}
	if len(f) == 3 {
		p.Node = f[2]
	}
	return p, nil
}

// Exit statuses of a rank, which tell the launcher whether a relaunch can
// help (the values of sysexits.h).
const (
	// ExitConfig (EX_CONFIG): a configuration error (a redundancy scheme
	// the nodes cannot hold, an unusable shared tier, a problem that does
	// not fit the number of ranks). A relaunch would fail the same way:
	// the launcher gives up at once.
	ExitConfig = 78
	// ExitJobFailed (EX_TEMPFAIL): the rank stopped because the job
	// failed elsewhere (the coordinator aborted it, or a peer or the
	// coordinator was lost). It is a symptom, never the cause.
	ExitJobFailed = 75
	// ExitCannotServe (EX_NOINPUT): a rank restarted alone under the
	// uncoordinated strategy found that its own checkpoint or message
	// log cannot serve its recovery (lost, corrupt, or a peer's log
	// gone): the launcher falls back to relaunching the whole job from
	// its newest consistent checkpoints.
	ExitCannotServe = 66
)

// Restored is the payload of KeyRestored: where a launch restored from.
type Restored struct {
	Source     string // cache, rebuild, shared, or none (a start from scratch)
	Checkpoint string // its name ("" with none)
}

// Sources of Restored.
const (
	SourceCache   = "cache"
	SourceRebuild = "rebuild"
	SourceShared  = "shared"
	SourceNone    = "none"
)

// Encode is "SOURCE NAME", or the source alone without a checkpoint.
func (r Restored) Encode() []byte {
	if r.Checkpoint == "" {
		return []byte(r.Source)
	}
	return []byte(r.Source + " " + r.Checkpoint)
}

// DecodeRestored reads Encode's form; whatever follows the first blank is
// the checkpoint's name.
func DecodeRestored(b []byte) Restored {
	src, name, _ := strings.Cut(string(b), " ")
	return Restored{Source: src, Checkpoint: name}
}

// FlushStats are what a launch's flushes did: the payload of KeyFlush
// and VarFlushPrior. They are the public flushstats.Stats (also
// ckpt.FlushStats and flush.Stats), with their one JSON form.
type FlushStats = flushstats.Stats

// DecodeFlushStats reads FlushStats.Encode's form.
func DecodeFlushStats(b []byte) (FlushStats, error) { return flushstats.Decode(b) }
