package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/storage"
)

// Comm is how the engine reaches the other ranks of its job: the
// collective calls of group.Group, and point-to-point transports for
// redundancy sets.
type Comm interface {
	group.Group
	// SetTransport connects this rank to the other members of a redundancy
	// set. members are job ranks in set order and include this rank; every
	// member calls it with the same members and the same epoch. Closing
	// the returned Closer ends this member's participation: peers still
	// waiting for it then fail instead of hanging.
	SetTransport(ctx context.Context, members []int, epoch uint64) (redundancy.Transport, io.Closer, error)
}

// Config is a rank's resolved configuration: nothing in it is defaulted or
// read from the environment by the engine.
type Config struct {
	Rank, Size int
	Node       string // the node whose cache this rank writes
	Domain     string // optional failure domain larger than a node
	Cache      storage.Backend
	Shared     storage.Backend // nil: no shared tier
	// Scheme is the redundancy scheme ("xor:4", ...); "" chooses at each
	// commit from the ranks' failure domains (see schemeFor).
	Scheme    string
	BlockSize int // redundancy block per shard; 0 for the default
	// KeepCache and KeepShared are how many checkpoints each tier keeps
	// (≤ 0: all).
	KeepCache, KeepShared int
	// Compress stores each file Create writes compressed when a sample of
	// it says that pays (compress.go); restarts read either form.
	Compress bool
	Comm     Comm
}

// Engine is one rank's checkpoint engine. Its collective methods must be
// called by every rank of the job in the same order; it is not safe for
// concurrent use.
type Engine struct {
	Config
	// Pinned, if set, names checkpoints cache retention must keep (a
	// non-blocking flush still pulls them).
	Pinned func(name string) bool
	// Eligible, if set, says which checkpoints Restart may restore: one it
	// rejects is left where it is but never offered (an SCR application
	// marked it failed, or picked an older one as current, or it is an
	// output, not a checkpoint), nor does cache retention count it as the
	// newest recoverable one it must keep. Every rank must answer alike.
	Eligible func(name string, id uint64) bool
	epoch    uint64 // collective operations so far, to tell transports apart
	lastID   uint64 // ID of the newest checkpoint committed or restored
	// decoded remembers the manifests of this node's cache that retention
	// decoded, by their text (decodeMemo).
	decoded map[string]*manifest.Manifest
	// seen holds the stamps of the files the last Restart verified, for
	// its Restored.Open (stamp.go).
	seen *verifiedFiles
}

// New returns the engine of one rank.
func New(cfg Config) *Engine { return &Engine{Config: cfg} }

// LastID is the ID of the newest checkpoint this rank committed or
// restored (0 for none).
func (e *Engine) LastID() uint64 { return e.lastID }

// ErrNoCheckpoint is wrapped by Restart's error when no checkpoint can be
// recovered.
var ErrNoCheckpoint = errors.New("no recoverable checkpoint")

// ErrCheckpointFailed is wrapped by Commit's error when every rank learned
// that the checkpoint failed, in the same round and for the same reason (a
// rank could not write its part or its parity, a node its manifest): no
// rank keeps any of it, the previous checkpoint stays current, and the
// ranks agree, so the job may go on and checkpoint again later. Commit's
// other errors (a rank lost mid-commit) leave the ranks unsure of each
// other: the job must end.
var ErrCheckpointFailed = errors.New("the checkpoint failed on every rank")

// ErrConfig is wrapped by errors that no relaunch of the same job can fix:
// a redundancy scheme its ranks cannot form sets for.
var ErrConfig = errors.New("configuration error")

func configError(err error) error { return configErr{err} }

// configErr marks an error as ErrConfig, its message unchanged.
type configErr struct{ error }

func (e configErr) Unwrap() []error { return []error{e.error, ErrConfig} }

// GatherJSON is AllGather of a JSON-encoded value.
func GatherJSON[T any](ctx context.Context, g group.Group, v T) ([]T, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	raw, err := g.AllGather(ctx, b)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("message from rank %d: %w", i, err)
		}
	}
	return out, nil
}

// ErrString is err's message, "" for nil: how a rank reports its error to
// the others.
func ErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// firstError turns the first rank-reported error into an error naming the rank.
func firstError[T any](all []T, get func(T) string) error {
	for r, m := range all {
		if e := get(m); e != "" {
			return fmt.Errorf("rank %d: %s", r, e)
		}
	}
	return nil
}

// reportAll is the round after each rank did its share of a step: every
// rank sends its error ("" for none), so that all learn whether the step
// succeeded everywhere. err is the job's failure; failed the first rank's.
func (e *Engine) reportAll(ctx context.Context, mine error) (failed error, err error) {
	reports, err := GatherJSON(ctx, e.Comm, ErrString(mine))
	if err != nil {
		return nil, err
	}
	return firstError(reports, func(s string) string { return s }), nil
}
