package ckpt

import "fmt"

// Compression says whether a checkpoint's files are compressed in the
// node's cache before redundancy protects them (and so on the shared
// tier too). Restart reads either form whatever the setting, and checks
// every byte the application gets against the hash of what it wrote.
type Compression int

const (
	// CompressDefault takes CKPT_COMPRESS, else CompressOff.
	CompressDefault Compression = iota
	// CompressOff stores every file as written.
	CompressOff
	// CompressAuto stores each file Checkpoint.Create writes compressed
	// (zstd or s2, byte-shuffled for float arrays) when a sample of its
	// first bytes shrinks by half at least, and as written otherwise,
	// so that random data costs only the sample's compressions. Files the
	// application writes itself (Checkpoint.Path) are stored as written,
	// and a compressed file has no Restored.Path: read it with Open.
	CompressAuto
)

// String is the name ParseCompression accepts.
func (c Compression) String() string {
	switch c {
	case CompressDefault:
		return "default"
	case CompressOff:
		return "off"
	case CompressAuto:
		return "auto"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// ParseCompression parses "auto" or "off"; "" is CompressOff.
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "", "off":
		return CompressOff, nil
	case "auto":
		return CompressAuto, nil
	}
	return 0, fmt.Errorf("compression %q: want auto (compress each file whose sample says it pays) or off", s)
}
