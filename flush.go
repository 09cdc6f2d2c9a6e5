package ckpt

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/flush/transfer"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/storage"
)

// Flushing every K-th checkpoint to the shared tier, blocking (the ranks
// copy their files themselves and the checkpoint returns when they are
// durable) or non-blocking (Sato et al. 2012: the node's staging client
// announces the checkpoint to a staging server, which pulls it while the
// application computes). The decision, the transfers and the statistics
// are package internal/flush's; the Job calls them here.

// Flush busy policies: what a non-blocking flush that falls due does while
// the previous one still runs.
const (
	FlushSkip = flush.Skip // skip this flush; the next due one goes
	FlushWait = flush.Wait // wait for the previous one, then announce
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
// are those of rank 0's node). The launcher reads the same fields, in the
// same JSON form.
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
	// by the background copy, the overhead factor α of Sato et al. 2012,
	// measured in the run itself.
	BusySteps   int     `json:"busy_steps"`
	BusySeconds float64 `json:"busy_seconds"`
	IdleSteps   int     `json:"idle_steps"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// Add returns the statistics of two launches (f the earlier) together:
// counts and times summed; the mode, K and the last failure those of g
// where it has them.
func (f FlushStats) Add(g FlushStats) FlushStats {
	return FlushStats(flush.Stats(f).Add(flush.Stats(g)))
}

// Spacing is the mean computation between consecutive checkpoints (NaN
// before two were taken).
func (f FlushStats) Spacing() float64 { return flush.Stats(f).Spacing() }

// Alpha is the overhead factor the steps measured: the mean step while a
// flush ran over the mean step while none did, less one (NaN without
// steps of both kinds).
func (f FlushStats) Alpha() float64 { return flush.Stats(f).Alpha() }

// Level1Cost is the mean time a checkpoint blocked the application before
// any flush (NaN if none was taken).
func (f FlushStats) Level1Cost() float64 { return flush.Stats(f).Level1Cost() }

// MeanSeconds is the mean time the application spent in one blocking
// flush (NaN if none ran).
func (f FlushStats) MeanSeconds() float64 { return flush.Stats(f).MeanSeconds() }

// MeanLatency is the mean time from announcing a non-blocking flush to its
// part being durable (NaN if none finished).
func (f FlushStats) MeanLatency() float64 { return flush.Stats(f).MeanLatency() }

// FlushStats reports this launch's flushes so far.
func (j *Job) FlushStats() FlushStats {
	j.refreshFlushes()
	return FlushStats(j.sched.Stats())
}

// newFlushScheduler reads the job's flush settings (options first, then
// the environment `ckpt run` set) into the scheduler that decides its
// flushes, and returns the staging servers (none: flushes are blocking).
func newFlushScheduler(opts JobOptions, pol policy.Policy) (*flush.Scheduler, []string, error) {
	var every policy.FlushEvery
	switch {
	case opts.FlushAuto > 0:
		every = policy.FlushEvery{Auto: true, Level2MTTI: opts.FlushAuto}
	case opts.FlushEvery > 0:
		every = policy.FlushEvery{K: opts.FlushEvery}
	case os.Getenv(envFlushEvery) != "":
		var err error
		if every, err = policy.ParseFlushEvery(os.Getenv(envFlushEvery)); err != nil {
			return nil, nil, configError(fmt.Errorf("ckpt: %s: %w", envFlushEvery, err))
		}
	default:
		every = policy.FlushEvery{K: 1}
	}
	var prior flush.Stats
	if v := os.Getenv(envFlushPrior); v != "" {
		var err error
		if prior, err = flush.DecodeStats([]byte(v)); err != nil {
			return nil, nil, fmt.Errorf("ckpt: %s=%q: %w", envFlushPrior, v, err)
		}
	}
	staging := opts.Staging
	if staging == "" {
		staging = os.Getenv(envStage)
	}
	addrs := parseStageAddrs(staging)
	busy := opts.FlushBusy
	if busy == "" {
		busy = os.Getenv(envFlushBusy)
	}
	switch busy {
	case "":
		busy = FlushSkip
	case FlushSkip, FlushWait:
	default:
		return nil, nil, configError(fmt.Errorf("ckpt: flush busy policy %q: want %s or %s", busy, FlushSkip, FlushWait))
	}
	return flush.NewScheduler(flush.Config{Every: every, NonBlocking: len(addrs) > 0, Busy: busy,
		Level1MTTI: pol.MTTI, Prior: prior}), addrs, nil
}

// timeStep accounts the step that just ended to the busy or idle steps
// (α), by whether a flush of this node ran when it began.
func (j *Job) timeStep() {
	j.sched.Step(j.stager != nil && j.stager.Busy())
}

// flushIsDue tells whether the checkpoint just committed goes to the
// shared tier. With auto, the ranks pool what they measured and each
// evaluates the Markov model on the same numbers, so all choose the same
// K.
func (j *Job) flushIsDue(ctx context.Context) bool {
	var pooled []flush.Inputs
	if j.sched.Auto() {
		var err error
		if pooled, err = engine.GatherJSON(ctx, j.store.comm, j.sched.Measured(j.interval)); err != nil {
			return false // the commit vote that follows reports the failure
		}
	}
	return j.sched.Due(j.store.eng.LastID(), pooled)
}

// flushDue runs the flush of checkpoint name, due for the shared tier.
func (j *Job) flushDue(ctx context.Context, name string) error {
	begin := j.sched.Begin()
	defer j.publishFlush(ctx)
	id := j.store.eng.LastID()
	if len(j.stageAddrs) == 0 {
		if j.blocking == nil {
			j.blocking = transfer.NewBlocking(j.store)
		}
		if err := j.blocking.Start(ctx, name); err != nil {
			return err
		}
		j.sched.Flushed(id, begin)
		return nil
	}
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
	switch j.sched.WhenBusy() {
	case FlushWait:
		if leader {
			start := time.Now()
			if err := j.stager.Wait(ctx); err != nil {
				if ctx.Err() != nil {
					return err
				}
				// Refused by the server: the checkpoint is safe at level
				// 1; the flush is reported failed and the job goes on,
				// counting it as started as the other ranks do (they
				// must agree on when the next one is due).
				j.sched.Abandoned(id, err.Error())
				return nil
			}
			j.sched.Waited(start)
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
			j.sched.Skipped()
			return nil
		}
	}
	j.sched.Started(id)
	if !leader {
		return nil
	}
	if err := j.stager.Start(ctx, name); err != nil {
		j.sched.Failed(err.Error())
		return nil
	}
	j.sched.Announced(name)
	return nil
}

// startStager connects this node's staging client to its server.
func (j *Job) startStager(m *manifest.Manifest) {
	token := os.Getenv(envStageToken)
	if token == "" {
		token = j.token
	}
	j.stager = transfer.NewStaged(transfer.StagedConfig{Addrs: j.stageAddrs, Token: token, Node: j.node,
		Source: storeSource{j.store}, Logf: func(format string, args ...any) {
			if os.Getenv(jobenv.VarDebug) != "" {
				fmt.Fprintf(os.Stderr, "rank %d: "+format+"\n", append([]any{j.rank}, args...)...)
			}
		}}, m)
	// A checkpoint the server is pulling stays in the cache until it is
	// durable, however many newer ones are taken meanwhile.
	j.store.eng.Pinned = j.stager.Pinned
}

// refreshFlushes counts the announced flushes that finished.
func (j *Job) refreshFlushes() {
	if j.stager != nil {
		j.sched.Refresh(j.stager)
	}
}

// publishFlush tells the launcher (rank 0 only) what the flushes did, if
// that changed since it last did.
func (j *Job) publishFlush(ctx context.Context) {
	if j.rank != 0 || j.client == nil {
		return
	}
	j.refreshFlushes()
	f := j.sched.Stats()
	if f == j.published {
		return
	}
	if b, err := f.Encode(); err == nil && j.client.Publish(ctx, jobenv.KeyFlush, b) == nil {
		j.published = f
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
