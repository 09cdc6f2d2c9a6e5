package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/cluster"
	"github.com/ckpt/ckpt/internal/compress"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/sharedtier"
	"github.com/ckpt/ckpt/storage"
)

// mixedState is what rank r writes with compression on: zero-heavy,
// float, random and small files, each with the rank in it.
func mixedState(r int) map[string][]byte {
	tag := func(b []byte) []byte {
		copy(b, fmt.Sprintf("rank %d;", r))
		return b
	}
	return map[string][]byte{
		"zeros":  tag(compress.ZeroHeavy(600<<10 + 100*r)),
		"floats": tag(compress.Floats32(500<<10+4*r, 1e-7)),
		"random": tag(compress.RandomBytes(300<<10+r, byte(r))),
		"small":  tag(bytes.Repeat([]byte{'s'}, 1000)),
	}
}

var mixedFiles = []string{"zeros", "floats", "random", "small"}

// writeMixed checkpoints mixedState as name, in pieces of odd sizes.
func writeMixed(ctx context.Context, r *cluster.Rank, name string) error {
	c, err := r.Engine.Start(name)
	if err != nil {
		return err
	}
	for file, data := range mixedState(r.ID) {
		f, err := c.Create(file)
		if err != nil {
			return err
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 77777)
			if _, err := f.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return c.Commit(ctx)
}

// readMixed restarts and checks every byte of mixedState(rank), read
// through Open, and that the restart came from source.
func readMixed(ctx context.Context, r *cluster.Rank, name string, source engine.Source) (*engine.Restored, error) {
	res, err := r.Engine.Restart(ctx)
	if err != nil {
		return nil, err
	}
	if res.Name() != name || res.Source != source {
		return nil, fmt.Errorf("restored %s from %s, want %s from %s (skipped %+v)", res.Name(), res.Source, name, source, res.Skipped)
	}
	for file, want := range mixedState(r.ID) {
		rd, err := res.Open(file)
		if err != nil {
			return nil, err
		}
		got, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return nil, fmt.Errorf("rank %d %s: %w", r.ID, file, err)
		}
		if !bytes.Equal(got, want) {
			return nil, fmt.Errorf("rank %d %s: %d bytes restored differ from the %d written", r.ID, file, len(got), len(want))
		}
	}
	return res, nil
}

// relaunchMixed relaunches c and restarts every rank from checkpoint
// name, from source, checking every byte (readMixed); it returns what
// each rank restored.
func relaunchMixed(c *cluster.Cluster, name string, source engine.Source) []*engine.Restored {
	c.Relaunch()
	res := make([]*engine.Restored, len(c.Ranks()))
	c.MustRun(func(ctx context.Context, r *cluster.Rank) (err error) {
		res[r.ID], err = readMixed(ctx, r, name, source)
		return err
	})
	return res
}

func compressOn(c *cluster.Cluster) {
	for _, r := range c.Ranks() {
		r.Engine.Compress = true
	}
}

// manifestOf loads checkpoint name's manifest from node slot n's cache.
func manifestOf(t *testing.T, c *cluster.Cluster, n int, name string) *manifest.Manifest {
	t.Helper()
	m, err := cachetier.Load(context.Background(), c.Cache(n), name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileOf(t *testing.T, m *manifest.Manifest, rank int, name string) manifest.File {
	t.Helper()
	for _, f := range m.Parts[rank].Files {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("rank %d has no file %q", rank, name)
	return manifest.File{}
}

// With compression on, each file gets the form its sample calls for (the
// zero-heavy and float files compressed, the float ones byte-shuffled,
// random and small ones stored as written), the manifest keeps the
// application's sizes and hashes beside the stored ones, and a restart
// after a node loss rebuilds the compressed objects from XOR parity and
// hands back every byte.
func TestCompressedRebuildAfterNodeLoss(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	compressOn(c)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return writeMixed(ctx, r, "c1") })
	m := manifestOf(t, c, 0, "c1")
	for r := range 4 {
		state := mixedState(r)
		for _, name := range mixedFiles {
			f := fileOf(t, m, r, name)
			if f.Size != int64(len(state[name])) || f.Hash != manifest.ContentHashBytes(state[name]) {
				t.Errorf("rank %d %s: the manifest's size and hash are not those of the application's bytes", r, name)
			}
			compressed := name == "zeros" || name == "floats"
			if (f.Codec != "") != compressed {
				t.Errorf("rank %d %s: codec %q, want compressed %v", r, name, f.Codec, compressed)
			}
			if compressed && f.StoredSize >= f.Size*9/10 { // compress.PaysBelow
				t.Errorf("rank %d %s: stored %d bytes of %d", r, name, f.StoredSize, f.Size)
			}
			if name == "floats" && f.Filter == "" {
				t.Errorf("rank %d floats: no shuffle filter", r)
			}
		}
	}
	c.LoseNode(2)
	relaunchMixed(c, "c1", engine.SourceRebuild)
}

// A corrupted byte of a compressed object is found by its stored hash at
// restart, and the object rebuilt; one corrupted after the restart fails
// the application's read instead of reaching it whole.
func TestCompressedCorruptByte(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	compressOn(c)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return writeMixed(ctx, r, "c1") })
	rank1 := c.Ranks()[1]
	c.Corrupt(rank1.Node, cachetier.FileObject("c1", 1, "zeros"))
	res := relaunchMixed(c, "c1", engine.SourceRebuild)
	if f := fileOf(t, manifestOf(t, c, rank1.Node, "c1"), 1, "zeros"); f.Codec == "" {
		t.Fatal("the corrupted file was not stored compressed: the test tests nothing")
	}
	rank1 = c.Ranks()[1]
	c.Corrupt(rank1.Node, cachetier.FileObject("c1", 1, "zeros"))
	readFails(t, res[1], 1, "zeros")
}

// readFails checks that reading rank's file of res fails with ErrCorrupt
// and does not deliver the file whole.
func readFails(t *testing.T, res *engine.Restored, rank int, file string) {
	t.Helper()
	rd, err := res.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, err := io.ReadAll(rd)
	if !errors.Is(err, manifest.ErrCorrupt) {
		t.Fatalf("reading a damaged compressed file: %v, want ErrCorrupt", err)
	}
	if bytes.Equal(got, mixedState(rank)[file]) {
		t.Fatal("the damaged file was delivered whole")
	}
}

// A compressed object cut short is found by its size at restart and
// rebuilt; one cut short after the restart fails the read.
func TestCompressedTruncated(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Mem: true})
	compressOn(c)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return writeMixed(ctx, r, "c1") })
	truncate := func() {
		r3 := c.Ranks()[3]
		obj := cachetier.FileObject("c1", 3, "floats")
		data, err := storage.Load(context.Background(), c.Cache(r3.Node), obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storage.Save(context.Background(), c.Cache(r3.Node), obj, bytes.NewReader(data[:len(data)/2])); err != nil {
			t.Fatal(err)
		}
	}
	truncate()
	res := relaunchMixed(c, "c1", engine.SourceRebuild)
	truncate()
	readFails(t, res[3], 3, "floats")
}

// A flush copies the stored (compressed) objects to the shared tier as
// they are, and a restart that must fetch them back gets every byte.
func TestCompressedFlushAndFetch(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4", Shared: true, Mem: true})
	compressOn(c)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		if err := writeMixed(ctx, r, "c1"); err != nil {
			return err
		}
		return r.Engine.Flush(ctx, "c1")
	})
	m := manifestOf(t, c, 0, "c1")
	for r := range 4 {
		var stored, logical int64
		for _, f := range m.Parts[r].Files {
			n, _ := f.Stored()
			stored, logical = stored+n, logical+f.Size
		}
		info, err := c.Shared().Stat(context.Background(), sharedtier.DataObject("c1", r))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != stored || stored >= logical {
			t.Errorf("rank %d: shared object of %d bytes, stored form %d, application's %d", r, info.Size, stored, logical)
		}
	}
	c.LoseNode(1)
	c.LoseNode(2)
	relaunchMixed(c, "c1", engine.SourceShared)
}

// A checkpoint written without compression (its manifest has no codec,
// as every manifest from before compression) restores under an engine
// that compresses, and a compressed file has no Path: it must be Opened.
func TestCompressionMixedCheckpoints(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 4, Nodes: 4, Scheme: "xor:4"})
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error { return writeMixed(ctx, r, "plain") })
	if text, err := storage.Load(context.Background(), c.Cache(0), cachetier.ManifestObject("plain")); err != nil || strings.Contains(string(text), "codec") {
		t.Fatalf("a checkpoint without compression has a codec in its manifest (%v)", err)
	}
	c.LoseNode(0)
	c.Relaunch()
	compressOn(c)
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		res, err := readMixed(ctx, r, "plain", engine.SourceRebuild)
		if err != nil {
			return err
		}
		if _, err := res.Path("zeros"); err != nil {
			return fmt.Errorf("Path of an uncompressed file: %w", err)
		}
		return writeMixed(ctx, r, "squeezed")
	})
	c.Relaunch()
	c.MustRun(func(ctx context.Context, r *cluster.Rank) error {
		res, err := readMixed(ctx, r, "squeezed", engine.SourceCache)
		if err != nil {
			return err
		}
		if _, err := res.Path("zeros"); err == nil || !strings.Contains(err.Error(), "read it with Open") {
			return fmt.Errorf("Path of a compressed file: %v, want a refusal", err)
		}
		if _, err := res.Path("random"); err != nil {
			return fmt.Errorf("Path of a file stored as written: %w", err)
		}
		// Restart verified the manifest's files only: no path to another.
		if _, err := res.Path("stats-dump"); err == nil || !strings.Contains(err.Error(), "has no file") {
			return fmt.Errorf("Path of a file not in the manifest: %v, want a refusal", err)
		}
		return nil
	})
}

// BenchmarkCreate writes a file of each kind through Create with
// compression off and auto into a cache on process durability (the page
// cache: the CPU's cost, hardly the disk's), committing nothing.
func BenchmarkCreate(b *testing.B) {
	const size = 64 << 20
	for _, kind := range []struct {
		name string
		data []byte
	}{{"random", compress.RandomBytes(size, 1)}, {"zeros", compress.ZeroHeavy(size)}, {"floats", compress.Floats32(size, 1e-7)}} {
		for _, auto := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/compress=%v", kind.name, auto), func(b *testing.B) {
				c := cluster.New(b, cluster.Config{Ranks: 1, Nodes: 1, Scheme: "single", NoSync: true})
				e := c.Ranks()[0].Engine
				e.Compress = auto
				b.SetBytes(size)
				for i := range b.N {
					ck, err := e.Start(fmt.Sprintf("c%d", i))
					if err != nil {
						b.Fatal(err)
					}
					f, err := ck.Create("state")
					if err != nil {
						b.Fatal(err)
					}
					for p := kind.data; len(p) > 0; p = p[min(len(p), 1<<20):] {
						if _, err := f.Write(p[:min(len(p), 1<<20)]); err != nil {
							b.Fatal(err)
						}
					}
					if err := f.Close(); err != nil {
						b.Fatal(err)
					}
					ck.Abort()
				}
			})
		}
	}
}

// A compressed file abandoned by Abort or Fail ends its compressor's
// streams: no goroutine of the codec outlives it.
func TestCompressedAbortEndsStreams(t *testing.T) {
	c := cluster.New(t, cluster.Config{Ranks: 1, Nodes: 1, Scheme: "single", Mem: true})
	e := c.Ranks()[0].Engine
	e.Compress = true
	before := runtime.NumGoroutine()
	for i := range 20 {
		ck, err := e.Start(fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ck.Create("zeros")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(compress.ZeroHeavy(4 << 20)); err != nil {
			t.Fatal(err)
		}
		ck.Abort()
	}
	// The codecs' goroutines end as their streams close; a leak keeps
	// 20 of them for good. The deadline only bounds a hang.
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after 20 abandoned compressed files, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
