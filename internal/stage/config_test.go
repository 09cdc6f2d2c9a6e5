package stage

import (
	"errors"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Writers: DefaultWriters, Depth: DefaultDepth, ChunkSize: DefaultChunkSize,
		Buffer: DefaultBuffer(DefaultWriters, DefaultDepth, DefaultChunkSize)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		change func(*Config)
		field  string
	}{
		{func(c *Config) { c.Writers = 0 }, "writers"},
		{func(c *Config) { c.Writers = MaxWriters + 1 }, "writers"},
		{func(c *Config) { c.Depth = 0 }, "depth"},
		{func(c *Config) { c.Depth = MaxDepth + 1 }, "depth"},
		{func(c *Config) { c.Keep = -1 }, "keep"},
		{func(c *Config) { c.ChunkSize = 0 }, "chunk-size"},
		{func(c *Config) { c.ChunkSize = MaxChunk + 1 }, "chunk-size"},
		{func(c *Config) { c.Buffer = DefaultChunkSize - 1 }, "buffer"},
	} {
		cfg := ok
		c.change(&cfg)
		var ce *ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want an error of %s", cfg, err, c.field)
		}
	}
}

// A server left to choose its writers runs as many as the shared tier says
// it serves at once (storage.Properties.Connections), never fewer than
// DefaultWriters nor more than MaxWriters, and sizes its default buffer
// from them.
func TestWritersFromConnections(t *testing.T) {
	dir := func(n int) storage.Backend {
		b, err := local.New(t.TempDir(), local.WithConnections(n))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	plain, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, c := range []struct {
		name   string
		shared storage.Backend
		want   int
	}{
		{"a plain directory (2)", plain, DefaultWriters},
		{"one connection", dir(1), DefaultWriters},
		{"a parallel file system of 12", dir(12), 12},
		{"mem (16, as s3 by default)", mem.New(), 16},
		{"beyond the bound", dir(MaxWriters + 1), MaxWriters},
	} {
		if got := WritersFor(c.shared); got != c.want {
			t.Errorf("%s: WritersFor = %d, want %d", c.name, got, c.want)
		}
	}
	srv, err := NewServer(Config{Shared: dir(12), Token: "t", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.cfg.Writers != 12 || srv.cfg.Buffer != DefaultBuffer(12, DefaultDepth, DefaultChunkSize) {
		t.Errorf("NewServer on a tier of 12 connections: %d writers, buffer %d; want 12 and %d",
			srv.cfg.Writers, srv.cfg.Buffer, DefaultBuffer(12, DefaultDepth, DefaultChunkSize))
	}
	srv2, err := NewServer(Config{Shared: dir(12), Token: "t", Writers: 3, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if srv2.cfg.Writers != 3 {
		t.Errorf("Writers 3 given: %d writers", srv2.cfg.Writers)
	}
}
