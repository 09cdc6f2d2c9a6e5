package transparent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/internal/tcplock"
)

// MetaFile is the file of a rank's part of a checkpoint that describes
// the rest.
const MetaFile = "transparent.json"

// metaVersion is the version of MetaFile's format.
const metaVersion = 1

// Meta is a rank's state at a checkpoint, beside its images.
type Meta struct {
	Version int `json:"version"`
	// Step is the supervisor's step at the checkpoint: the restarted loop
	// goes on from it.
	Step int64 `json:"step"`
	// Exited says the program had ended (with ExitCode): there is no tree
	// to restore, only its output.
	Exited   bool `json:"exited"`
	ExitCode int  `json:"exit_code"`
	// Stdout and Stderr are where the program's output ended.
	Stdout Stream `json:"stdout"`
	Stderr Stream `json:"stderr"`
	// Images are CRIU's image files, each a file of the checkpoint.
	Images []string `json:"images"`
	// Compressed are the images stored as zstd frames (compress.go); the
	// others are stored as CRIU wrote them.
	Compressed []string `json:"compressed,omitempty"`
	// Files are the regular files the program had open for writing, with
	// their sizes: a restore cuts each back to its size (CRIU refuses to
	// restore a file whose size changed since the dump, and what the
	// program wrote after the checkpoint is written again).
	Files []OpenFile `json:"files,omitempty"`
	// Conns are the established TCP connections of the tree, dumped
	// with them (Config.Net): a restore locks them until every rank is
	// back (package tcplock).
	Conns []tcplock.Conn `json:"conns,omitempty"`
}

// OpenFile is a regular file a program had open for writing at a
// checkpoint.
type OpenFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Stream is one output stream at a checkpoint: the length of its file,
// and the inode of the pipe the program wrote it through (the key under
// which CRIU's images name the pipe).
type Stream struct {
	Offset int64  `json:"offset"`
	Pipe   uint64 `json:"pipe"`
}

// ErrBadMeta is wrapped when a checkpoint's MetaFile cannot be used.
var ErrBadMeta = errors.New("transparent: bad checkpoint metadata")

// Marshal encodes m.
func (m Meta) Marshal() ([]byte, error) {
	m.Version = metaVersion
	return json.Marshal(m)
}

// UnmarshalMeta decodes and checks a MetaFile.
func UnmarshalMeta(b []byte) (Meta, error) {
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrBadMeta, err)
	}
	return m, m.validate()
}

func (m Meta) validate() error {
	switch {
	case m.Version != metaVersion:
		return fmt.Errorf("%w: version %d, want %d", ErrBadMeta, m.Version, metaVersion)
	case m.Step < 0:
		return fmt.Errorf("%w: step %d", ErrBadMeta, m.Step)
	case m.Stdout.Offset < 0 || m.Stderr.Offset < 0:
		return fmt.Errorf("%w: negative output offset", ErrBadMeta)
	case m.Exited && len(m.Images) > 0:
		return fmt.Errorf("%w: an ended program with images", ErrBadMeta)
	case !m.Exited && len(m.Images) == 0:
		return fmt.Errorf("%w: a running program without images", ErrBadMeta)
	case !m.Exited && (m.Stdout.Pipe == 0 || m.Stderr.Pipe == 0):
		return fmt.Errorf("%w: a running program without its output pipes", ErrBadMeta)
	case slices.Contains(m.Images, MetaFile):
		return fmt.Errorf("%w: an image named %s", ErrBadMeta, MetaFile)
	}
	for _, f := range m.Files {
		if !filepath.IsAbs(f.Path) || f.Size < 0 {
			return fmt.Errorf("%w: open file %q of size %d", ErrBadMeta, f.Path, f.Size)
		}
	}
	for _, c := range m.Compressed {
		if !slices.Contains(m.Images, c) {
			return fmt.Errorf("%w: %s compressed but not an image", ErrBadMeta, c)
		}
	}
	return nil
}
