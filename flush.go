package ckpt

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/stage"
	"github.com/ckpt/ckpt/storage"
)

// Flushing every K-th checkpoint to the shared tier, blocking (the ranks
// copy their files themselves and the checkpoint returns when they are
// durable) or non-blocking (paper 001: the node's staging client announces
// the checkpoint to a staging server, which pulls it while the application
// computes).

// Flush busy policies: what a non-blocking flush that falls due does while
// the previous one still runs.
const (
	FlushSkip = "skip" // skip this flush; the next due one goes
	FlushWait = "wait" // wait for the previous one, then announce
)

const (
	envStage     = jobenv.VarStage     // staging servers, host:port,host:port
	envFlushBusy = jobenv.VarFlushBusy // skip or wait
	// envStageToken is the secret staging servers accept: one for the
	// whole job (the coordinator's token changes with every launch, the
	// staging servers outlive launches). Default: the coordinator's.
	envStageToken = jobenv.VarStageToken
)

// FlushStats count what a job's flushes did in this launch, as rank 0 saw
// them (every rank takes the same decisions; finished non-blocking flushes
// are those of rank 0's node).
type FlushStats struct {
	Mode    string  `json:"mode"`    // "blocking" or "nonblocking"
	K       int     `json:"k"`       // the K in force at the last checkpoint (auto: the last chosen)
	Due     int     `json:"due"`     // checkpoints due for the shared tier
	Started int     `json:"started"` // blocking: completed; non-blocking: announced
	Skipped int     `json:"skipped"` // non-blocking, skip: the previous flush still ran
	Waited  float64 `json:"waited_seconds"`
	// Seconds is the time the application spent in blocking flushes.
	Seconds float64 `json:"seconds"`
	// Durable and Failed count non-blocking flushes finished; Latency is
	// their summed time from announcement to durable.
	Durable int     `json:"durable"`
	Failed  int     `json:"failed"`
	Latency float64 `json:"latency_seconds"`
	// LastFailure is the reason the last failed flush gave.
	LastFailure string `json:"last_failure,omitempty"`
	// KError says why --flush-every auto could not choose K at the last
	// checkpoint (the K before stayed in force); empty when it could.
	KError string `json:"k_error,omitempty"`
	// Level1 and Level1Seconds count the checkpoints taken and the time
	// they blocked the application before any flush (the level-1 cost).
	Level1        int     `json:"level1"`
	Level1Seconds float64 `json:"level1_seconds"`
	// Spans and SpanSeconds count the stretches of computation between
	// consecutive checkpoints and their summed durations: the interval in
	// force when the application decides itself when to checkpoint.
	Spans       int     `json:"spans"`
	SpanSeconds float64 `json:"span_seconds"`
	// Steps while a flush of rank 0's node ran (Busy) and while none did
	// (Idle), and their summed durations, as NeedCheckpoint saw them
	// (steps that took a checkpoint excluded): the slowdown of computation
	// by the background copy, 001's overhead factor α, measured in the
	// run itself.
	BusySteps   int     `json:"busy_steps"`
	BusySeconds float64 `json:"busy_seconds"`
	IdleSteps   int     `json:"idle_steps"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// Add returns the statistics of two launches (f the earlier) together:
// counts and times summed; the mode, K and the last failure those of g
// where it has them.
func (f FlushStats) Add(g FlushStats) FlushStats {
	if g.Mode != "" {
		f.Mode = g.Mode
	}
	if g.K > 0 {
		f.K = g.K
	}
	if g.LastFailure != "" {
		f.LastFailure = g.LastFailure
	}
	f.KError = g.KError
	f.Due += g.Due
	f.Started += g.Started
	f.Skipped += g.Skipped
	f.Waited += g.Waited
	f.Seconds += g.Seconds
	f.Durable += g.Durable
	f.Failed += g.Failed
	f.Latency += g.Latency
	f.Level1 += g.Level1
	f.Level1Seconds += g.Level1Seconds
	f.Spans += g.Spans
	f.SpanSeconds += g.SpanSeconds
	f.BusySteps += g.BusySteps
	f.BusySeconds += g.BusySeconds
	f.IdleSteps += g.IdleSteps
	f.IdleSeconds += g.IdleSeconds
	return f
}

// Spacing is the mean computation between consecutive checkpoints (NaN
// before two were taken).
func (f FlushStats) Spacing() float64 {
	if f.Spans == 0 {
		return math.NaN()
	}
	return f.SpanSeconds / float64(f.Spans)
}

// Alpha is the overhead factor the steps measured: the mean step while a
// flush ran over the mean step while none did, less one (NaN without
// steps of both kinds).
func (f FlushStats) Alpha() float64 {
	if f.BusySteps == 0 || f.IdleSteps == 0 || f.IdleSeconds <= 0 {
		return math.NaN()
	}
	return (f.BusySeconds/float64(f.BusySteps))/(f.IdleSeconds/float64(f.IdleSteps)) - 1
}

// Level1Cost is the mean time a checkpoint blocked the application before
// any flush (NaN if none was taken).
func (f FlushStats) Level1Cost() float64 {
	if f.Level1 == 0 {
		return math.NaN()
	}
	return f.Level1Seconds / float64(f.Level1)
}

// MeanSeconds is the mean time the application spent in one blocking
// flush (NaN if none ran).
func (f FlushStats) MeanSeconds() float64 {
	if f.Mode != "blocking" || f.Started == 0 {
		return math.NaN()
	}
	return f.Seconds / float64(f.Started)
}

// MeanLatency is the mean time from announcing a non-blocking flush to its
// part being durable (NaN if none finished).
func (f FlushStats) MeanLatency() float64 {
	if f.Durable == 0 {
		return math.NaN()
	}
	return f.Latency / float64(f.Durable)
}

// timeStep accounts the step that just ended (the time since the previous
// NeedCheckpoint) to the busy or idle steps, by whether a flush of this
// node ran when it began.
func (j *Job) timeStep(now time.Duration) {
	if j.stepAt > 0 && !j.stepCheckpointed {
		dt := (now - j.stepAt).Seconds()
		if j.stepBusy {
			j.flush.BusySteps++
			j.flush.BusySeconds += dt
		} else {
			j.flush.IdleSteps++
			j.flush.IdleSeconds += dt
		}
	}
	j.stepAt, j.stepCheckpointed = now, false
	j.stepBusy = j.stager != nil && j.stager.Busy()
}

// FlushStats reports this launch's flushes so far.
func (j *Job) FlushStats() FlushStats {
	j.refreshFlushes()
	return j.flush
}

// flushIsDue tells whether the checkpoint just committed goes to the
// shared tier. A fixed K counts checkpoint IDs across launches (a job
// relaunched often still flushes one in K). With auto, the ranks pool what
// they measured and each evaluates the Markov model on the same numbers,
// so all choose the same K; a flush is due K checkpoints after the last one
// started (a skipped one is tried again at the next checkpoint).
func (j *Job) flushIsDue(ctx context.Context) bool {
	id := j.store.eng.LastID()
	if !j.flushEvery.Auto {
		return id%uint64(j.flushK) == 0
	}
	// What this launch measured, with what the launches before it did.
	seen := j.prior.Add(j.flush)
	mine := flushInputs{C1: seen.Level1Cost(), Alpha: seen.Alpha(), Interval: j.interval.Seconds()}
	if len(j.stageAddrs) == 0 {
		mine.Flush = seen.MeanSeconds()
	} else {
		mine.Flush = seen.MeanLatency()
	}
	if mine.Interval <= 0 {
		// The application decides when to checkpoint: the interval is
		// the computation it does between checkpoints.
		mine.Interval = seen.Spacing()
	}
	all, err := engine.GatherJSON(ctx, j.store.comm, mine.finite())
	if err != nil {
		return false // the commit vote that follows reports the failure
	}
	var agg flushInputs
	for _, in := range all {
		agg.C1, agg.Flush, agg.Alpha = max(agg.C1, in.C1), max(agg.Flush, in.Flush), max(agg.Alpha, in.Alpha)
		agg.Interval = max(agg.Interval, in.Interval)
	}
	sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	in := policy.FlushInputs{Interval: sec(agg.Interval), Level1Cost: sec(agg.C1), Level2MTTI: j.flushEvery.Level2MTTI,
		NonBlocking: len(j.stageAddrs) > 0, FlushCost: sec(agg.Flush), Alpha: agg.Alpha, Level1MTTI: j.pol.MTTI}
	k, err := policy.ChooseK(in)
	j.flush.KError = ""
	switch {
	case err != nil:
		// Every rank fails alike (the same pooled inputs): K stays.
		j.flush.KError = err.Error()
	default:
		j.flushK = k
	}
	j.flush.K = j.flushK
	if j.lastFlush == 0 && id > 1 {
		j.lastFlush = id - 1 // a restarted job counts from where it restored
	}
	return id >= j.lastFlush+uint64(j.flushK)
}

// flushInputs are one rank's measurements for choosing K (seconds).
type flushInputs struct {
	C1, Flush, Alpha, Interval float64
}

func (f flushInputs) finite() flushInputs {
	fix := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0
		}
		return x
	}
	return flushInputs{fix(f.C1), fix(f.Flush), fix(f.Alpha), fix(f.Interval)}
}

// flushDue runs the flush of checkpoint name, due for the shared tier.
func (j *Job) flushDue(ctx context.Context, name string) error {
	j.flush.Due++
	j.flush.K = j.flushK
	defer j.publishFlush(ctx)
	if len(j.stageAddrs) == 0 {
		j.flush.Mode = "blocking"
		start := time.Now()
		if err := j.store.Flush(ctx, name); err != nil {
			return err
		}
		j.flush.Started++
		j.flush.Seconds += time.Since(start).Seconds()
		j.lastFlush = j.store.eng.LastID()
		return nil
	}
	j.flush.Mode = "nonblocking"
	raw, err := storage.Load(ctx, j.store.eng.Cache, cachetier.ManifestObject(name))
	var m *manifest.Manifest
	if err == nil {
		m, err = manifest.Decode(raw)
	}
	if err != nil {
		return fmt.Errorf("reading the committed manifest: %w", err)
	}
	leader := j.rank == engine.LowestRankOn(m, j.node)
	if leader && j.stager == nil {
		j.startStager(m)
	}
	j.refreshFlushes()
	switch j.flushBusy {
	case FlushWait:
		if leader {
			start := time.Now()
			if err := j.stager.WaitIdle(ctx); err != nil {
				if ctx.Err() != nil {
					return err
				}
				// Refused by the server: the checkpoint is safe at level
				// 1; the flush is reported failed and the job goes on,
				// counting it as started as the other ranks do (they
				// must agree on when the next one is due).
				j.flush.Failed++
				j.flush.LastFailure = err.Error()
				j.lastFlush = j.store.eng.LastID()
				return nil
			}
			j.flush.Waited += time.Since(start).Seconds()
			j.refreshFlushes()
		}
	default:
		// Every node's previous flush must be over, or none announces:
		// a checkpoint some nodes flush and others skip never completes.
		idle := !leader || !j.stager.Busy()
		ok, err := group.AllAgree(ctx, j.store.comm, idle)
		if err != nil {
			return err
		}
		if !ok {
			j.flush.Skipped++
			return nil
		}
	}
	j.flush.Started++
	j.lastFlush = j.store.eng.LastID()
	if !leader {
		return nil
	}
	var ranks []int
	for _, p := range m.Parts {
		if p.Node == j.node {
			ranks = append(ranks, p.Rank)
		}
	}
	if err := j.stager.Announce(name, raw, ranks); err != nil {
		j.flush.Failed++
		j.flush.LastFailure = err.Error()
		return nil
	}
	j.announced.add(name)
	return nil
}

// startStager connects this node's staging client to its server: the
// nodes, in name order, are dealt to the servers in turn, so that every
// server serves as many nodes as the others, give or take one.
func (j *Job) startStager(m *manifest.Manifest) {
	var nodes []string
	for _, p := range m.Parts {
		if !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	addr := j.stageAddrs[slices.Index(nodes, j.node)%len(j.stageAddrs)]
	token := os.Getenv(envStageToken)
	if token == "" {
		token = j.token
	}
	j.stager = stage.NewClient(stage.ClientConfig{Addr: addr, Token: token, Node: j.node,
		Source: storeSource{j.store}, Logf: func(format string, args ...any) {
			if os.Getenv(jobenv.VarDebug) != "" {
				fmt.Fprintf(os.Stderr, "rank %d: "+format+"\n", append([]any{j.rank}, args...)...)
			}
		}})
	// A checkpoint the server is pulling stays in the cache until it is
	// durable, however many newer ones are taken meanwhile.
	j.store.eng.Pinned = j.stager.Pinned
}

// refreshFlushes counts the announced flushes that finished.
func (j *Job) refreshFlushes() {
	if j.stager != nil {
		j.announced.refresh(j.stager, &j.flush)
	}
}

// flushStates is what a staging client knows of the flushes it announced.
type flushStates interface {
	State(name string) (st stage.State, reason string, ok bool)
	Latency(name string) (time.Duration, bool)
}

// flushTracker follows the flushes a node announced until they finish. A
// flush counts as durable once the node's part is (with several staging
// servers, the server that commits the checkpoint tells only its own
// nodes), and is followed further: if another node's part then fails, the
// server fails the whole flush, and it counts as failed instead.
type flushTracker struct {
	names     []string           // announced, not yet seen committed or failed
	durableAt map[string]float64 // latency counted for a name seen durable
}

func (t *flushTracker) add(name string) { t.names = append(t.names, name) }

func (t *flushTracker) refresh(states flushStates, f *FlushStats) {
	t.names = slices.DeleteFunc(t.names, func(name string) bool {
		st, reason, ok := states.State(name)
		lat, counted := t.durableAt[name]
		switch {
		case !ok:
			delete(t.durableAt, name)
			return true
		case st == stage.Failed:
			if counted {
				f.Durable--
				f.Latency -= lat
			}
			f.Failed++
			f.LastFailure = reason
			delete(t.durableAt, name)
			return true
		case st == stage.Pending:
			return false
		}
		// Durable or Committed.
		if !counted {
			d, _ := states.Latency(name)
			f.Durable++
			f.Latency += d.Seconds()
			if t.durableAt == nil {
				t.durableAt = map[string]float64{}
			}
			t.durableAt[name] = d.Seconds()
		}
		if st == stage.Committed {
			delete(t.durableAt, name)
			return true
		}
		return false
	})
}

// publishFlush tells the launcher (rank 0 only) what the flushes did, if
// that changed since it last did.
func (j *Job) publishFlush(ctx context.Context) {
	if j.rank != 0 || j.client == nil {
		return
	}
	j.refreshFlushes()
	if j.flush == j.published {
		return
	}
	if b, err := jobenv.FlushStats(j.flush).Encode(); err == nil && j.client.Publish(ctx, jobenv.KeyFlush, b) == nil {
		j.published = j.flush
	}
}

// parseStageAddrs reads a list of staging servers.
func parseStageAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// storeSource serves a node's cache to its staging client.
type storeSource struct{ s *Store }

func (src storeSource) Manifest(ctx context.Context, name string) ([]byte, error) {
	return storage.Load(ctx, src.s.eng.Cache, cachetier.ManifestObject(name))
}

// Open hands out the cache's own reader: for a local cache it sends the
// file to the socket with sendfile(2).
func (src storeSource) Open(ctx context.Context, name string, rank int, file string, offset, length int64) (io.ReadCloser, error) {
	return src.s.eng.Cache.Open(ctx, cachetier.FileObject(name, rank, file), offset, length)
}
