package rank

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/flush/transfer"
	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// Flushing every K-th checkpoint to the shared tier, blocking (the ranks
// copy their files themselves and the checkpoint returns when they are
// durable) or non-blocking (Sato et al. 2012: the node's staging client
// announces the checkpoint to a staging server, which pulls it while the
// application computes). Package flush's Scheduler decides and counts,
// package flush/transfer moves the bytes; this file drives them from
// Checkpoint.

// FlushStats reports this launch's flushes so far.
func (r *Runtime) FlushStats() flush.Stats {
	r.refreshFlushes()
	return r.sched.Stats()
}

// WaitFlushes waits until no non-blocking flush of this node is pending
// (at once without any).
func (r *Runtime) WaitFlushes(ctx context.Context) error {
	if r.stager == nil {
		return nil
	}
	return r.stager.Wait(ctx)
}

// timeStep accounts the step that just ended to the busy or idle steps
// (α), by whether a flush of this node ran when it began.
func (r *Runtime) timeStep() {
	r.sched.Step(r.stager != nil && r.stager.Busy())
}

// flushIsDue tells whether the checkpoint just committed goes to the
// shared tier. With auto, the ranks pool what they measured and each
// evaluates the Markov model on the same numbers, so all choose the same
// K.
func (r *Runtime) flushIsDue(ctx context.Context) bool {
	var pooled []flush.Inputs
	if r.sched.Auto() {
		var err error
		if pooled, err = engine.GatherJSON(ctx, r.eng.Comm, r.sched.Measured(r.interval)); err != nil {
			return false // the commit vote that follows reports the failure
		}
	}
	return r.sched.Due(r.eng.LastID(), pooled)
}

// flushDue runs the flush of checkpoint name, due for the shared tier.
func (r *Runtime) flushDue(ctx context.Context, name string) error {
	begin := r.sched.Begin()
	defer r.publishFlush(ctx)
	id := r.eng.LastID()
	if !r.cfg.Flush.NonBlocking {
		if r.blocking == nil {
			r.blocking = transfer.NewBlocking(r.eng)
		}
		if err := r.blocking.Start(ctx, name); err != nil {
			return err
		}
		r.sched.Flushed(id, begin)
		return nil
	}
	raw, err := storage.Load(ctx, r.eng.Cache, cachetier.ManifestObject(name))
	var m *manifest.Manifest
	if err == nil {
		m, err = manifest.Decode(raw)
	}
	if err != nil {
		return fmt.Errorf("reading the committed manifest: %w", err)
	}
	leader := r.rank == engine.LowestRankOn(m, r.node)
	if leader && r.stager == nil {
		r.startStager(m)
	}
	r.refreshFlushes()
	switch r.sched.WhenBusy() {
	case flush.Wait:
		if leader {
			start := time.Now()
			if err := r.stager.Wait(ctx); err != nil {
				if ctx.Err() != nil {
					return err
				}
				// Refused by the server: the checkpoint is safe at level
				// 1; the flush is reported failed and the job goes on,
				// counting it as started as the other ranks do (they
				// must agree on when the next one is due).
				r.sched.Abandoned(id, err.Error())
				return nil
			}
			r.sched.Waited(start)
			r.refreshFlushes()
		}
	default:
		// Every node's previous flush must be over, or none announces:
		// a checkpoint some nodes flush and others skip never completes.
		idle := !leader || !r.stager.Busy()
		ok, err := group.AllAgree(ctx, r.eng.Comm, idle)
		if err != nil {
			return err
		}
		if !ok {
			r.sched.Skipped()
			return nil
		}
	}
	r.sched.Started(id)
	if !leader {
		return nil
	}
	if err := r.stager.Start(ctx, name); err != nil {
		r.sched.Failed(err.Error())
		return nil
	}
	r.sched.Announced(name)
	return nil
}

// startStager connects this node's staging client to its server.
func (r *Runtime) startStager(m *manifest.Manifest) {
	token := r.cfg.StageToken
	if token == "" {
		token = r.cfg.Token
	}
	var tlsCfg *tls.Config
	if r.tls != nil {
		tlsCfg = r.tls.Client
	}
	r.stager = transfer.NewStaged(transfer.StagedConfig{Addrs: r.cfg.Stage, Token: token, Node: r.node, TLS: tlsCfg,
		Source: cacheSource{r.eng.Cache}, Logf: func(format string, args ...any) {
			if r.cfg.Debug {
				fmt.Fprintf(os.Stderr, "rank %d: "+format+"\n", append([]any{r.rank}, args...)...)
			}
		}}, m)
	// A checkpoint the server is pulling stays in the cache until it is
	// durable, however many newer ones are taken meanwhile.
	r.eng.Pinned = r.stager.Pinned
}

// refreshFlushes counts the announced flushes that finished.
func (r *Runtime) refreshFlushes() {
	if r.stager != nil {
		r.sched.Refresh(r.stager)
	}
}

// publishFlush tells the launcher (rank 0 only) what the flushes did, if
// that changed since it last did.
func (r *Runtime) publishFlush(ctx context.Context) {
	if r.rank != 0 || r.client == nil {
		return
	}
	r.refreshFlushes()
	f := r.sched.Stats()
	if f == r.published {
		return
	}
	if b, err := f.Encode(); err == nil && r.client.Publish(ctx, jobenv.KeyFlush, b) == nil {
		r.published = f
	}
}

// cacheSource serves a node's cache to its staging client.
type cacheSource struct{ cache storage.Backend }

func (src cacheSource) Manifest(ctx context.Context, name string) ([]byte, error) {
	return storage.Load(ctx, src.cache, cachetier.ManifestObject(name))
}

// Open hands out the cache's own reader: for a local cache it sends the
// file to the socket with sendfile(2).
func (src cacheSource) Open(ctx context.Context, name string, rank int, file string, offset, length int64) (io.ReadCloser, error) {
	return src.cache.Open(ctx, cachetier.FileObject(name, rank, file), offset, length)
}
