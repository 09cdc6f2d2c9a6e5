package logstore

import (
	"fmt"
	"slices"

	"github.com/ckpt/ckpt/internal/msglog"
)

// Mem is the in-memory twin of File. Close does not discard it: a test may
// reopen it by using it again, as a restarted rank reopens its log.
type Mem struct {
	base uint64
	recs []msglog.Record
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty log.
func NewMem() *Mem { return &Mem{} }

// NewMemAt returns an empty log of base base: its first record is
// base+1 (CreateFile's twin).
func NewMemAt(base uint64) *Mem { return &Mem{base: base} }

func (m *Mem) last() uint64 { return m.base + uint64(len(m.recs)) }

// Append implements Store.
func (m *Mem) Append(recs []msglog.Record) error {
	if err := checkOrder(m.last(), recs); err != nil {
		return err
	}
	for _, r := range recs {
		r.Data = slices.Clone(r.Data)
		m.recs = append(m.recs, r)
	}
	return nil
}

// ReadAfter implements Store.
func (m *Mem) ReadAfter(after uint64, fn func(msglog.Record) error) error {
	if after < m.base {
		return fmt.Errorf("logstore: reading after index %d: %w up to %d", after, ErrTruncated, m.base)
	}
	for i := after - m.base; i < uint64(len(m.recs)); i++ {
		r := m.recs[i]
		r.Data = slices.Clone(r.Data)
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Truncate implements Store.
func (m *Mem) Truncate(upTo uint64) error {
	if upTo > m.last() {
		return fmt.Errorf("logstore: truncating up to index %d beyond the last, %d", upTo, m.last())
	}
	if upTo <= m.base {
		return nil
	}
	m.recs = slices.Clone(m.recs[upTo-m.base:])
	m.base = upTo
	return nil
}

// Bounds implements Store.
func (m *Mem) Bounds() (uint64, uint64, error) { return m.base, m.last(), nil }

// Close implements Store.
func (m *Mem) Close() error { return nil }

// Corrupt flips one bit of the data (or, for a record without data, the
// sequence number) of the record with index i, as a disk might: for tests.
func (m *Mem) Corrupt(i uint64) {
	r := &m.recs[i-m.base-1]
	if len(r.Data) > 0 {
		r.Data[len(r.Data)/2] ^= 0x10
	} else {
		r.Seq ^= 1
	}
}

func checkOrder(last uint64, recs []msglog.Record) error {
	for _, r := range recs {
		if r.Index != last+1 {
			return fmt.Errorf("logstore: appending record %d after %d: %w", r.Index, last, ErrGap)
		}
		last = r.Index
	}
	return nil
}
