package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/examples/himeno"
	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/localcomm"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// CompressConfig is what `ckpt bench compress` measures: the checkpoint
// of 4 ranks over 4 nodes, XOR across them, caches synced on Dir's disk,
// with compression off and auto, on four kinds of state of the same
// size per rank: Himeno's (its pressure array after Iterations sweeps of
// a one-rank solver of grid Himeno, cut into the 4 ranks' slabs of
// planes), zero-heavy, float32s with noise in their low bits (which a
// shuffle shrinks by about a fifth: too little to pay, the case where
// compressing would cost more time than the bytes it saves), and random.
type CompressConfig struct {
	Dir        string
	Himeno     himeno.Config
	Iterations int
	Rounds     int // checkpoints per kind and setting, taking turns (median)
	Progress   func(step string)
}

// CompressKind is one kind of state's figures.
type CompressKind struct {
	State string // "himeno", "zero-heavy", "noisy-floats" or "random"
	// RankBytes is each rank's bytes; Logical and Stored all ranks' bytes
	// as written and as stored with compression auto; Ratio is Logical
	// over Stored; Forms counts the files' forms (compress.Form.String).
	RankBytes, Logical, Stored int64
	Ratio                      float64
	Forms                      map[string]int
	// Medians over the rounds, in seconds: the checkpoint (write and
	// commit: data, parity, manifest, synced) and the restart after one
	// node's cache is lost (rebuild from XOR, then every rank reads its
	// files back through Restored.Open), with compression off and auto;
	// TimeRatio is CheckpointAuto over CheckpointOff (issue 17: at most
	// 1.05 on random bytes).
	CheckpointOff, CheckpointAuto float64
	RestartOff, RestartAuto       float64
	TimeRatio, RestartRatio       float64
	// RawWrite is the limit without compression, measured in the same
	// rounds: 4 writers writing RankBytes each raw, with fsync (data
	// alone, without parity: a checkpoint without compression stays above
	// it); FloorRatio is it over CheckpointAuto, above 1 when compression
	// beats the floor of the uncompressed bytes.
	RawWrite, FloorRatio float64
}

// CompressResult is every kind's figures.
type CompressResult struct {
	Kinds      []CompressKind
	Grid       string // the Himeno grid
	Iterations int
}

// RunCompress runs the measurements; it writes below cfg.Dir and removes
// what it wrote.
func RunCompress(ctx context.Context, cfg CompressConfig) (CompressResult, error) {
	res := CompressResult{Grid: cfg.Himeno.String(), Iterations: cfg.Iterations}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	if cfg.Rounds < 1 {
		cfg.Rounds = 3
	}
	cfg.Progress(fmt.Sprintf("Himeno %s: %d iterations", cfg.Himeno, cfg.Iterations))
	slabs, err := HimenoSlabs(ctx, cfg.Himeno, cfg.Iterations, 4)
	if err != nil {
		return res, err
	}
	size := len(slabs[0])
	kinds := []struct {
		name  string
		state func(r int) []byte
	}{
		{"himeno", func(r int) []byte { return slabs[r] }},
		{"zero-heavy", func(r int) []byte { return compress.ZeroHeavy(size) }},
		{"noisy-floats", func(r int) []byte { return compress.Floats32(size, 1e-4) }},
		{"random", func(r int) []byte { return compress.RandomBytes(size, byte(r)) }},
	}
	work, err := os.MkdirTemp(cfg.Dir, "ckpt-bench-compress-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(work)
	buf := compress.RandomBytes(block, 9)
	for _, kind := range kinds {
		states := make([][]byte, 4)
		for r := range states {
			states[r] = kind.state(r)
		}
		k := CompressKind{State: kind.name, RankBytes: int64(size), Forms: map[string]int{}}
		var off, on, roff, ron, raw []float64
		for round := range cfg.Rounds {
			cfg.Progress(fmt.Sprintf("%s: round %d of %d", kind.name, round+1, cfg.Rounds))
			// The settings take turns at going first.
			order := []bool{false, true}
			if round%2 == 1 {
				order = []bool{true, false}
			}
			for _, auto := range order {
				t, stored, err := compressRound(ctx, filepath.Join(work, "round"), states, auto)
				if err != nil {
					return res, fmt.Errorf("%s, compression %v: %w", kind.name, auto, err)
				}
				if auto {
					on, ron = append(on, t[0]), append(ron, t[1])
					k.Stored, k.Forms = stored.bytes, stored.forms
				} else {
					off, roff = append(off, t[0]), append(roff, t[1])
				}
			}
			d, err := ScenarioRaw(filepath.Join(work, "raw"), int64(size), buf)
			if err != nil {
				return res, err
			}
			raw = append(raw, d)
		}
		k.Logical = 4 * int64(size)
		k.Ratio = float64(k.Logical) / float64(k.Stored)
		k.CheckpointOff, k.CheckpointAuto = median(off), median(on)
		k.RestartOff, k.RestartAuto = median(roff), median(ron)
		k.TimeRatio, k.RestartRatio = k.CheckpointAuto/k.CheckpointOff, k.RestartAuto/k.RestartOff
		k.RawWrite = median(raw)
		k.FloorRatio = k.RawWrite / k.CheckpointAuto
		res.Kinds = append(res.Kinds, k)
	}
	return res, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// storedForm is what a checkpoint stored: its files' bytes and forms.
type storedForm struct {
	bytes int64
	forms map[string]int
}

// compressRound checkpoints states (one per rank) with compression auto
// or off on fresh synced caches below dir, then removes node 1's cache
// and restarts, every rank reading its file back. It returns the two
// durations in seconds and what the checkpoint stored.
func compressRound(ctx context.Context, dir string, states [][]byte, auto bool) ([2]float64, storedForm, error) {
	var out [2]float64
	st := storedForm{forms: map[string]int{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, st, err
	}
	defer os.RemoveAll(dir)
	all := func(fn func(e *engine.Engine) error) (float64, error) {
		comms := localcomm.Job(4)
		engines := make([]*engine.Engine, 4)
		for r := range engines {
			node := fmt.Sprintf("node%d", r)
			cache, err := local.New(filepath.Join(dir, node))
			if err != nil {
				return 0, err
			}
			defer cache.Close()
			engines[r] = engine.New(engine.Config{Rank: r, Size: 4, Node: node, Cache: cache, KeepCache: 2,
				Scheme: "xor:4", Comm: comms[r], Compress: auto})
		}
		return timeRanks(engines, fn)
	}
	var err error
	if out[0], err = all(func(e *engine.Engine) error {
		c, err := e.Start("bench")
		if err != nil {
			return err
		}
		f, err := c.Create("state")
		if err != nil {
			return err
		}
		// The application writes its state in 1 MiB pieces.
		for p := states[e.Rank]; len(p) > 0; {
			n := min(len(p), block)
			if _, err := f.Write(p[:n]); err != nil {
				f.Close()
				return err
			}
			p = p[n:]
		}
		if err := f.Close(); err != nil {
			return err
		}
		return c.Commit(ctx)
	}); err != nil {
		return out, st, err
	}
	m, err := loadManifest(ctx, filepath.Join(dir, "node0"), "bench")
	if err != nil {
		return out, st, err
	}
	for _, p := range m.Parts {
		for _, f := range p.Files {
			n, _ := f.Stored()
			st.bytes += n
			st.forms[compress.Form{Codec: f.Codec, Filter: f.Filter}.String()]++
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "node1")); err != nil {
		return out, st, err
	}
	out[1], err = all(func(e *engine.Engine) error {
		res, err := e.Restart(ctx)
		if err != nil {
			return err
		}
		if res.Source != engine.SourceRebuild {
			return fmt.Errorf("restarted from %s, want a rebuild", res.Source)
		}
		rd, err := res.Open("state")
		if err != nil {
			return err
		}
		defer rd.Close()
		var got bytes.Buffer
		got.Grow(len(states[e.Rank]))
		if _, err := io.Copy(&got, rd); err != nil {
			return err
		}
		if !bytes.Equal(got.Bytes(), states[e.Rank]) {
			return fmt.Errorf("rank %d: restored bytes differ", e.Rank)
		}
		return nil
	})
	return out, st, err
}

// loadManifest reads checkpoint name's manifest from the cache directory.
func loadManifest(ctx context.Context, dir, name string) (*manifest.Manifest, error) {
	cache, err := local.New(dir)
	if err != nil {
		return nil, err
	}
	defer cache.Close()
	return cachetier.Load(ctx, cache, name)
}

// HimenoSlabs is Himeno's checkpoint state on grid cfg after iterations
// sweeps of a one-rank solver, its pressure array (what the solver's
// WriteTo saves, without its header and checksum) cut into ranks slabs of
// whole float32s, as ranks ranks would hold it.
func HimenoSlabs(ctx context.Context, cfg himeno.Config, iterations, ranks int) ([][]byte, error) {
	s, err := himeno.New(cfg, 0, 1)
	if err != nil {
		return nil, err
	}
	for range iterations {
		if _, err := s.Step(ctx, soloComm{}); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if _, err := s.WriteTo(&b); err != nil {
		return nil, err
	}
	const header, trailer = 8 + 7*4 + 8, 4 // himeno's state format
	p := b.Bytes()[header : b.Len()-trailer]
	slabs := make([][]byte, ranks)
	floats := len(p) / 4
	for r := range slabs {
		slabs[r] = p[4*(r*floats/ranks) : 4*((r+1)*floats/ranks)]
	}
	return slabs, nil
}

// soloComm is the communicator of a one-rank Himeno solver: it never
// sends, and gathers only its own data.
type soloComm struct{}

func (soloComm) Rank() int { return 0 }
func (soloComm) Size() int { return 1 }
func (soloComm) Send(context.Context, int, uint64, []byte) error {
	return fmt.Errorf("a solver of one rank sends nothing")
}
func (soloComm) Recv(context.Context, int, uint64, []byte) ([]byte, error) {
	return nil, fmt.Errorf("a solver of one rank receives nothing")
}
func (soloComm) AllGather(_ context.Context, data []byte) ([][]byte, error) {
	return [][]byte{data}, nil
}
