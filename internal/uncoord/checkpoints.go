package uncoord

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/internal/fields"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// Checkpoints keeps each rank's own checkpoints under uncoordinated
// checkpointing: taken by the rank alone, outside the engine's collective
// commit (which encodes across ranks and votes), as one file holding the
// application's state and the driver's Snapshot (Snapshot.Bytes), written
// whole or not at all and checked by hash. Each is written to every
// directory Dirs names, in order — the rank's node's cache, then its
// protector's (ProtectorOf) — so that losing the rank's node with its
// cache leaves the protector's copy (RADIC: Fialho et al. 2011 §3.2).
// Only once Save returned may the runtime call Protected, which truncates
// the log behind the snapshot.
type Checkpoints struct {
	// Dirs are the directories rank's copies live in, the preferred
	// first (Load reads the first that holds a sound one).
	Dirs func(rank int) ([]string, error)
}

// ErrNoCheckpoint is returned by Load when no directory holds a copy of
// the rank's checkpoint: the rank restarts from the beginning, and the
// driver's Start finds out whether its log can serve that (it cannot
// once truncated behind a checkpoint: ErrCannotServe).
var ErrNoCheckpoint = errors.New("uncoord: no checkpoint of the rank")

const ckptMagic = "ckUC1"

func ckptPath(dir string, rank int) string {
	return filepath.Join(dir, "uncoord", fmt.Sprintf("rank-%d.ckpt", rank))
}

// Save writes rank's checkpoint (state and snapshot) to every directory
// of Dirs, each replacing the last one there only once it is durable
// (written to a temporary file, synced, renamed, its directory synced). A
// failure leaves the previous checkpoint readable where it was not yet
// replaced; the caller must not call Protected then.
func (c Checkpoints) Save(rank int, state, snapshot []byte) error {
	dirs, err := c.Dirs(rank)
	if err != nil {
		return fmt.Errorf("uncoord: checkpoint of rank %d: %w", rank, err)
	}
	b := []byte(ckptMagic)
	b = fields.AppendBytes(b, state)
	b = fields.AppendBytes(b, snapshot)
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	for _, dir := range dirs {
		if err := writeWhole(ckptPath(dir, rank), b); err != nil {
			return fmt.Errorf("uncoord: checkpoint of rank %d in %s: %w", rank, dir, err)
		}
	}
	return nil
}

// writeWhole replaces the file path by b durably (local.WriteFile),
// first removing the temp files a crashed write of it left.
func writeWhole(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := local.RemoveTemps(path); err != nil {
		return err
	}
	return local.WriteFile(path, b, 0o600)
}

// Load reads rank's checkpoint from the first directory of Dirs that
// holds a sound copy, skipping missing ones (a node lost with its cache)
// and damaged ones. It returns ErrNoCheckpoint when no directory holds a
// copy, and an error wrapping ErrCannotServe when every copy there is is
// damaged: never a wrong byte.
func (c Checkpoints) Load(rank int) (state, snapshot []byte, err error) {
	dirs, err := c.Dirs(rank)
	if err != nil {
		return nil, nil, fmt.Errorf("uncoord: checkpoint of rank %d: %w", rank, err)
	}
	var damaged []error
	for _, dir := range dirs {
		b, err := os.ReadFile(ckptPath(dir, rank))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			if state, snapshot, err = decodeCheckpoint(b); err == nil {
				return state, snapshot, nil
			}
		}
		damaged = append(damaged, fmt.Errorf("%s: %w", ckptPath(dir, rank), err))
	}
	if len(damaged) > 0 {
		return nil, nil, fmt.Errorf("%w: checkpoint of rank %d: %w", ErrCannotServe, rank, errors.Join(damaged...))
	}
	return nil, nil, fmt.Errorf("%w (rank %d, in %d directories)", ErrNoCheckpoint, rank, len(dirs))
}

func decodeCheckpoint(b []byte) (state, snapshot []byte, err error) {
	if len(b) < len(ckptMagic)+sha256.Size || !bytes.HasPrefix(b, []byte(ckptMagic)) {
		return nil, nil, errors.New("not a checkpoint of the uncoordinated strategy")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, nil, errors.New("hash mismatch")
	}
	d := fields.NewDecoder(body[len(ckptMagic):])
	state = d.Bytes("state", len(body))
	snapshot = d.Bytes("snapshot", len(body))
	if err := d.End(); err != nil {
		return nil, nil, err
	}
	return state, snapshot, nil
}

// Remove deletes rank's checkpoint from every directory of Dirs: a rank
// that starts from the beginning (a whole-job relaunch) must not be
// restarted alone later from a checkpoint of an earlier launch.
func (c Checkpoints) Remove(rank int) error {
	dirs, err := c.Dirs(rank)
	if err != nil {
		return fmt.Errorf("uncoord: checkpoint of rank %d: %w", rank, err)
	}
	var errs []error
	for _, dir := range dirs {
		p := ckptPath(dir, rank)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if _, err := os.Stat(filepath.Dir(p)); err == nil {
			errs = append(errs, local.RemoveTemps(p))
		}
	}
	return errors.Join(errs...)
}
