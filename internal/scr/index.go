package scr

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Flags of a dataset (scr.h's SCR_FLAG_*).
const (
	FlagCheckpoint = 1
	FlagOutput     = 2
)

// Entry is one dataset the index knows.
type Entry struct {
	ID      uint64 `json:"id"`             // dataset id: scr.dataset.<id>
	Ckpt    uint64 `json:"ckpt,omitempty"` // checkpoint id (SCR_FLUSH counts these), 0 for output only
	Name    string `json:"name"`           // as the application named it
	Flags   int    `json:"flags"`
	Failed  bool   `json:"failed,omitempty"`  // SCR_Complete_restart(0) marked it
	Dropped bool   `json:"dropped,omitempty"` // SCR_Drop forgot it
	Flushed bool   `json:"flushed,omitempty"` // on the prefix
	// Object is the dataset's name in ckpt's tiers when it is not
	// Encode(Name): a dataset that replaces an older one of its name is
	// written beside it under a name of its own (ObjectFor), and the
	// older one is removed only once it is committed.
	Object string `json:"object,omitempty"`
}

// ObjectName is the dataset's name in ckpt's tiers.
func (e *Entry) ObjectName() string {
	if e.Object != "" {
		return e.Object
	}
	return Encode(e.Name)
}

// ObjectFor is the name in ckpt's tiers of dataset id named name when it
// replaces an older dataset of that name: Encode(name) and "%23" (an
// escaped '#', which Encode never writes) and the id.
func ObjectFor(name string, id uint64) string {
	return fmt.Sprintf("%s%%23%d", Encode(name), id)
}

// NameOf is the dataset name of object obj in ckpt's tiers: the index's
// entry, else Encode's inverse without ObjectFor's suffix (an object the
// index does not know, its index lost).
func (x *Index) NameOf(obj string) string {
	for i := range x.Datasets {
		if x.Datasets[i].ObjectName() == obj {
			return x.Datasets[i].Name
		}
	}
	if i := strings.LastIndex(obj, "%23"); i >= 0 {
		if _, err := strconv.ParseUint(obj[i+3:], 10, 64); err == nil {
			obj = obj[:i]
		}
	}
	return Decode(obj)
}

// Index is SCR's index of datasets (its .scr/index.scr): ids go on from
// the highest ever used, failed and dropped checkpoints are never offered
// for restart, and Current, if set, is the newest that may be. Every rank
// keeps the same Index, changed by the same collective calls; rank 0
// writes it to the prefix.
type Index struct {
	LastID   uint64  `json:"last_id"`
	LastCkpt uint64  `json:"last_ckpt"`
	Current  string  `json:"current,omitempty"`
	Datasets []Entry `json:"datasets,omitempty"`
}

// DecodeIndex reads an index; empty text is an empty index.
func DecodeIndex(b []byte) (Index, error) {
	var x Index
	if len(b) == 0 {
		return x, nil
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return Index{}, fmt.Errorf("the dataset index: %w", err)
	}
	return x, nil
}

func (x *Index) Encode() []byte {
	b, _ := json.MarshalIndent(x, "", "  ")
	return append(b, '\n')
}

// Find is the entry of the dataset named name, or nil.
func (x *Index) Find(name string) *Entry {
	for i := range x.Datasets {
		if x.Datasets[i].Name == name {
			return &x.Datasets[i]
		}
	}
	return nil
}

// Next reserves the next dataset's ids.
func (x *Index) Next(flags int) (id, ckpt uint64) {
	x.LastID++
	if flags&FlagCheckpoint != 0 {
		x.LastCkpt++
		return x.LastID, x.LastCkpt
	}
	return x.LastID, 0
}

// Add records a committed dataset, replacing an older one of its name,
// and makes it current.
func (x *Index) Add(e Entry) {
	x.Remove(e.Name)
	x.Datasets = append(x.Datasets, e)
	if e.Flags&FlagCheckpoint != 0 {
		x.Current = ""
	}
}

// Remove forgets the dataset named name.
func (x *Index) Remove(name string) {
	out := x.Datasets[:0]
	for _, e := range x.Datasets {
		if e.Name != name {
			out = append(out, e)
		}
	}
	x.Datasets = out
	if x.Current == name {
		x.Current = ""
	}
}

// Eligible says whether a restart may use the dataset named name: a
// checkpoint not failed nor dropped, and no newer than Current. One the
// index does not know (its index lost) may be used unless a current one
// is set.
func (x *Index) Eligible(name string) bool {
	e := x.Find(name)
	if e == nil {
		return x.Current == ""
	}
	if e.Failed || e.Dropped || e.Flags&FlagCheckpoint == 0 {
		return false
	}
	if x.Current != "" {
		c := x.Find(x.Current)
		return c != nil && e.ID <= c.ID
	}
	return true
}
