package stage

import (
	"errors"
	"testing"
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
