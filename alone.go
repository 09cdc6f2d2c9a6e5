package ckpt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/uncoord"
)

// Under the uncoordinated strategy (JobOptions.Strategy) a rank's
// checkpoint is its own, taken alone, outside the engine's collective
// commit: the files the application creates in Job.Checkpoint's save
// are kept in memory and saved, with the message log's part, as one
// file in the rank's node's cache and its protector's
// (docs/MESSAGE-LOGGING.md). Job.Restart reads them back.

// SourceOwn is where a rank restarted alone under the uncoordinated
// strategy restored from: its own checkpoint.
const SourceOwn = "own"

// ErrStrategy is wrapped by the errors of calls the job's strategy does
// not offer (a file path under the uncoordinated strategy, a collective
// commit of a checkpoint a rank takes alone).
var ErrStrategy = errors.New("not offered under the job's checkpointing strategy")

// ownCheckpoint is a checkpoint a rank takes alone: its files, in the
// order created.
type ownCheckpoint struct {
	name  string
	files []*ownFile
}

type ownFile struct {
	name   string
	buf    bytes.Buffer
	closed bool
}

func (c *ownCheckpoint) create(file string) (*File, error) {
	if err := manifest.ValidName(file); err != nil {
		return nil, fmt.Errorf("ckpt: checkpoint %q: file %q: %w", c.name, file, err)
	}
	if slices.ContainsFunc(c.files, func(f *ownFile) bool { return f.name == file }) {
		return nil, fmt.Errorf("ckpt: checkpoint %q: file %q created twice", c.name, file)
	}
	f := &ownFile{name: file}
	c.files = append(c.files, f)
	return &File{own: f}, nil
}

func (f *ownFile) write(p []byte) (int, error) {
	if f.closed {
		return 0, fmt.Errorf("ckpt: file %q: write after Close", f.name)
	}
	return f.buf.Write(p)
}

const ownMagic = "ckO1"

// encode is the checkpoint's name and files as one state for
// uncoord.Checkpoints (which hashes it).
func (c *ownCheckpoint) encode() ([]byte, error) {
	b := []byte(ownMagic)
	b = fields.AppendString(b, c.name)
	b = fields.AppendBytes(b, fmt.Appendf(nil, "%d", len(c.files)))
	for _, f := range c.files {
		if !f.closed {
			return nil, fmt.Errorf("ckpt: checkpoint %q: file %q not closed", c.name, f.name)
		}
		b = fields.AppendString(b, f.name)
		b = fields.AppendBytes(b, f.buf.Bytes())
	}
	return b, nil
}

// ownRestored is an ownCheckpoint read back.
type ownRestored struct {
	name  string
	names []string
	data  map[string][]byte
}

func decodeOwn(b []byte) (*ownRestored, error) {
	if !bytes.HasPrefix(b, []byte(ownMagic)) {
		return nil, errors.New("not a rank's own checkpoint")
	}
	d := fields.NewDecoder(b[len(ownMagic):])
	r := &ownRestored{name: d.String("name", len(b)), data: map[string][]byte{}}
	var n int
	if _, err := fmt.Sscanf(string(d.Bytes("count", 20)), "%d", &n); err != nil || n < 0 || n > len(b) {
		return nil, fmt.Errorf("a rank's own checkpoint: bad file count")
	}
	for range n {
		name := d.String("file", len(b))
		data := d.Bytes("data", len(b))
		if d.Err() != nil {
			break
		}
		r.names = append(r.names, name)
		r.data[name] = data
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return r, nil
}

// restoredOwn is the public face of a rank's own checkpoint.
func restoredOwn(state []byte) (*Restored, error) {
	o, err := decodeOwn(state)
	if err != nil {
		// Checkpoints.Load checked its hash: never a torn file, but the
		// strategy cannot serve what it cannot read.
		return nil, fmt.Errorf("ckpt: %w: %w", uncoord.ErrCannotServe, err)
	}
	return &Restored{own: o, Source: SourceOwn}, nil
}

func (o *ownRestored) open(file string) (io.ReadCloser, error) {
	b, ok := o.data[file]
	if !ok {
		return nil, fmt.Errorf("ckpt: checkpoint %q has no file %q", o.name, file)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}
