package ckpt

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/compress"
)

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]Compression{"": CompressOff, "off": CompressOff, "auto": CompressAuto} {
		if got, err := ParseCompression(in); err != nil || got != want || (in != "" && got.String() != in) {
			t.Errorf("ParseCompression(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseCompression("zstd"); err == nil || !strings.Contains(err.Error(), `"zstd"`) {
		t.Errorf("ParseCompression(zstd): %v, want an error naming the value", err)
	}
	t.Setenv("CKPT_COMPRESS", "always")
	_, err := Open(Options{CacheDir: t.TempDir(), Node: "n"})
	if err == nil || !strings.Contains(err.Error(), "CKPT_COMPRESS") || !strings.Contains(err.Error(), `"always"`) {
		t.Errorf("Open with a bad CKPT_COMPRESS: %v", err)
	}
}

// TestCompressOption: Options.Compress, else CKPT_COMPRESS, says whether
// a store compresses; the application reads back what it wrote either way.
func TestCompressOption(t *testing.T) {
	ctx := context.Background()
	state := compress.ZeroHeavy(1 << 20)
	for _, c := range []struct {
		name       string
		env        string
		opt        Compression
		compressed bool
	}{
		{"default", "", CompressDefault, false},
		{"option", "", CompressAuto, true},
		{"environment", "auto", CompressDefault, true},
		{"option over environment", "auto", CompressOff, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CKPT_COMPRESS", c.env)
			dir := t.TempDir()
			s, err := Open(Options{CacheDir: dir, Node: "n", Compress: c.opt})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ck, err := s.Start("c1")
			if err != nil {
				t.Fatal(err)
			}
			f, err := ck.Create("state")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(state); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ck.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			m, err := cachetier.Load(ctx, s.eng.Cache, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Parts[0].Files[0].Codec != ""; got != c.compressed {
				t.Fatalf("stored compressed: %v, want %v", got, c.compressed)
			}
			res, err := s.Restart(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r, err := res.Open("state")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, state) {
				t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(state))
			}
		})
	}
}
