package transparent

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/testwait"
)

// engineJob is a Job of one rank over a real engine with a cache
// directory (what cmd/ckpt's adapter gives the supervisor): with
// checkpoint, it takes one checkpoint at the first step and halts;
// without, it restarts and halts.
type engineJob struct {
	e          *engine.Engine
	checkpoint bool
	taken      bool
}

func (j *engineJob) Rank() int { return j.e.Rank }
func (j *engineJob) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	return j.e.Comm.AllGather(ctx, data)
}
func (j *engineJob) NeedCheckpoint(ctx context.Context, step int64) (bool, error) {
	need := j.checkpoint && !j.taken
	j.taken = j.taken || need
	return need, nil
}
func (j *engineJob) Halting() bool                                   { return !j.checkpoint || j.taken }
func (j *engineJob) Finish(ctx context.Context, result string) error { return nil }
func (j *engineJob) Checkpoint(ctx context.Context, name string, save func(Files) error) error {
	c, err := j.e.Start(name)
	if err != nil {
		return err
	}
	if err := save(engineFiles{c}); err != nil {
		return c.Fail(ctx, err)
	}
	return c.Commit(ctx)
}
func (j *engineJob) Restart(ctx context.Context) (Restored, error) {
	res, err := j.e.Restart(ctx)
	if errors.Is(err, engine.ErrNoCheckpoint) {
		return nil, nil
	}
	return res, err
}

type engineFiles struct{ c *engine.Checkpoint }

func (f engineFiles) Create(name string) (io.WriteCloser, error) { return f.c.Create(name) }
func (f engineFiles) Path(name string) (string, error)           { return f.c.Path(name) }

// engineLaunch runs one launch of the rank over the cache in dir.
func engineLaunch(t *testing.T, dir string, w *world, checkpoint bool) (*fakeRunner, *engine.Restored) {
	t.Helper()
	cache, err := local.New(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(engine.Config{Rank: 0, Size: 1, Node: "node0", Cache: cache, Comm: localcomm.Job(1)[0]})
	r := &fakeRunner{w: w, rank: 0}
	cfg := Config{Runner: r, Tool: fakeTool(w), Scratch: filepath.Join(dir, "scratch"), Tick: time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := Run(t.Context(), &engineJob{e: e, checkpoint: checkpoint}, cfg)
		done <- err
	}()
	if err := testwait.Recv(t, done, "the launch's end"); err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Rank: 0, Size: 1, Node: "node0", Cache: cache, Comm: localcomm.Job(1)[0]}).Restart(t.Context())
	if err != nil && !errors.Is(err, engine.ErrNoCheckpoint) {
		t.Fatal(err)
	}
	return r, res
}

// TestEngineInPlace runs the supervisor over the engine, as ckpt run
// --transparent does: the dump is written into the checkpoint's
// directory in the cache and committed from there (the engine hashes
// the routed images), the restart restores from that directory itself,
// and an image whose byte changed in the cache is never restored (the
// engine's verification finds it first).
func TestEngineInPlace(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, 1)
	_, res := engineLaunch(t, dir, w, true)
	if res == nil {
		t.Fatal("no checkpoint committed")
	}
	img, err := res.Path("fake.img")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(img); err != nil || len(b) == 0 {
		t.Fatalf("the image in the cache: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "scratch", "*")); len(left) != 0 {
		t.Errorf("left in the scratch directory: %v", left)
	}

	r, _ := engineLaunch(t, dir, w, false)
	if len(r.dirs) != 1 || r.dirs[0] != filepath.Dir(img) {
		t.Fatalf("restored from %v, want %s in place", r.dirs, filepath.Dir(img))
	}

	b, _ := os.ReadFile(img)
	b[0] ^= 1
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ = engineLaunch(t, dir, w, false)
	if len(r.dirs) != 0 || len(r.trees) != 1 {
		t.Errorf("restored from %v with a corrupted image (%d trees); want a start from scratch", r.dirs, len(r.trees))
	}
}
