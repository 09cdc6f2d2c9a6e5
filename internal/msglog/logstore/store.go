// Package logstore keeps a rank's message log at its protector: the
// records internal/msglog's Receiver gives to Persist, read back for a
// replay, and truncated once a newer checkpoint is protected. Store is the
// seam; Mem is its in-memory twin and File the protector's append-only
// file. Both pass the one conformance suite, logstoretest.Run.
//
// A store checks only the order of indexes it is given; it does not check
// records' hashes on the way in or out. The receiver does, when it
// replays (msglog.Record.Verify), so that a record is checked end to end:
// a corrupt record is returned as read, and the replay fails on it.
package logstore

import (
	"errors"

	"github.com/ckpt/ckpt/internal/msglog"
)

// Store is one rank's message log. Its methods are not safe for
// concurrent use: one driver owns a store.
type Store interface {
	// Append appends records, whose indexes must follow the log's last
	// one without a gap (the first after a truncation to base is
	// base+1), and returns once they are durable (as durable as the
	// store is: File with FileOptions.NoSync survives processes, not its
	// node). It fails, with
	// nothing appended, with an error wrapping ErrGap for a record out of
	// order; after an I/O error the log is as it was before the call. The
	// store copies the records' data.
	Append(recs []msglog.Record) error
	// ReadAfter calls fn with every record whose index is above after,
	// in order, and stops at fn's first error, which it returns. A
	// record's Data is fn's to keep. It fails with ErrTruncated if
	// records after after were dropped by Truncate, and with an error
	// wrapping ErrDamaged, once it has given the records before it, at a
	// part of the log it cannot read (File).
	ReadAfter(after uint64, fn func(msglog.Record) error) error
	// Truncate drops every record whose index is at most upTo; upTo at
	// or below the base changes nothing, and upTo beyond the last record
	// fails.
	Truncate(upTo uint64) error
	// Bounds returns the base (records up to it were truncated) and the
	// last record's index (base when the log is empty).
	Bounds() (base, last uint64, err error)
	// Close releases the store.
	Close() error
}

// ErrGap is wrapped by Append's error for a record whose index does not
// follow the last one.
var ErrGap = errors.New("record index does not follow the log's last")

// ErrTruncated is wrapped by ReadAfter's error for a point older than the
// log's base: the records the caller asks for are gone.
var ErrTruncated = errors.New("records truncated")
