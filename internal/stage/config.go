package stage

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/storage"
)

// The defaults NewServer gives the fields of Config left zero, and the
// bounds Validate accepts.
const (
	DefaultWriters   = 4
	DefaultDepth     = 2
	DefaultChunkSize = 4 << 20
	MaxWriters       = 1024
	MaxDepth         = 64
)

// WritersFor is the default Config.Writers for the shared tier shared: as
// many writers as it serves operations well at once
// (storage.Properties.Connections: 16 for s3, what local.WithConnections
// says for a parallel file system), so a server keeps an object store's
// connections busy. DefaultWriters is the floor: a plain directory (which
// says 2) or a backend that says nothing (1) keeps the 4 writers servers
// always had, since a writer also waits on pulls from the nodes, not only
// on the tier. MaxWriters is the ceiling, as for a configured count.
func WritersFor(shared storage.Backend) int {
	return min(max(storage.PropertiesOf(shared).Connections, DefaultWriters), MaxWriters)
}

// DefaultBuffer is the default Config.Buffer: every writer's transfer
// holding depth chunks.
func DefaultBuffer(writers, depth, chunkSize int) int64 {
	return int64(writers) * int64(depth) * int64(chunkSize)
}

// ConfigError is a Config field out of range. Field is the name of the
// quantity as `ckpt stage` spells its flag (writers, depth, keep,
// chunk-size, buffer), Value the value as given.
type ConfigError struct {
	Field, Value, Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("stage: %s %s: %s", e.Field, e.Value, e.Reason)
}

// Validate checks the sizes of a configuration that gives them all, as a
// command line does (NewServer fills those left zero with the defaults
// above; Validate does not): Writers in [1, MaxWriters], Depth in [1,
// MaxDepth], Keep ≥ 0, ChunkSize in [1 byte, MaxChunk], and a Buffer that
// holds at least one chunk. Its errors are *ConfigError.
func (c Config) Validate() error {
	switch {
	case c.Writers < 1 || c.Writers > MaxWriters:
		return &ConfigError{"writers", fmt.Sprint(c.Writers), fmt.Sprintf("want 1 to %d", MaxWriters)}
	case c.Depth < 1 || c.Depth > MaxDepth:
		return &ConfigError{"depth", fmt.Sprint(c.Depth), fmt.Sprintf("want 1 to %d", MaxDepth)}
	case c.Keep < 0:
		return &ConfigError{"keep", fmt.Sprint(c.Keep), "want 0 (all) or more"}
	case c.ChunkSize < 1 || c.ChunkSize > MaxChunk:
		return &ConfigError{"chunk-size", units.FormatSize(float64(c.ChunkSize)), "want 1 byte to " + units.FormatSize(MaxChunk)}
	case c.Buffer < int64(c.ChunkSize):
		return &ConfigError{"buffer", units.FormatSize(float64(c.Buffer)), "cannot hold one chunk of " + units.FormatSize(float64(c.ChunkSize))}
	}
	return nil
}
