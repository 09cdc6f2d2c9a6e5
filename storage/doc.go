// Package storage defines the one small interface through which ckpt reads
// and writes every storage tier, and the rules all tiers share.
//
// # Terms
//
// A backend (Backend) is one storage location: a node's cache directory, or
// the shared tier (a directory on a parallel file system, or a bucket of an
// S3-compatible object store). It holds objects.
//
// An object is a sequence of bytes stored under a name. Objects are written
// once, streamed through a Writer, and never modified in place: to change
// one, commit a new object under the same name.
//
// A name is a slash-separated relative path such as
// "ckpt.0007/rank-3/state.bin"; ValidName gives the exact rules. Names are
// compared and listed byte-wise. They are the same on every backend, so an
// object can be copied from one tier to another under its name.
//
// Commit is the moment an object comes into existence: before it nothing is
// visible under the name (not to Open, Stat or List); after it returns, the
// whole object is visible and durable, surviving a crash of the process or
// the machine. A commit that replaces an object is atomic: readers see the
// old object or the new one, never a part. An object whose writer dies before
// Commit is never visible; its leftovers (temp files in names starting with
// TempPrefix, incomplete uploads) are removed by a Cleaner.
//
// # Errors
//
// Failures are *Error values naming the operation and the object, wrapping
// a sentinel (ErrNotExist, ErrExists, ErrClosed) or the backend's cause; a
// bad name yields an error from ValidName wrapping ErrInvalidName. Whether to
// retry is decided where the error arises: IsPermanent is true for errors
// that another try cannot cure (a full disk, a read-only file system, a
// missing permission, a missing object) and false for the rest.
//
// # Optional interfaces
//
// The Backend interface is kept small. Capabilities that only some backends
// have are separate interfaces (Locator, Cleaner, Describer), found with As,
// which also looks through decorators that embed a Backend and implement
// Unwrapper.
//
// # Decorators
//
// A decorator is a Backend that wraps another and adds one concern. ckpt
// has two, in internal/storage, and stacks them in one place only,
// internal/storage/location, which opens a tier by its location (a
// directory or s3://BUCKET/PREFIX). From the backend outwards:
//
//  1. throttle caps the bytes per second written and read (a modelled
//     parallel file system shared with other jobs);
//  2. retry tries an operation again when it fails with an error that
//     IsPermanent does not call permanent, with exponential backoff and
//     jitter, honouring the context. It retries Open, Stat, List, Remove and
//     Create (before any byte is written), never a Writer's Write or
//     Commit: their bytes are gone once Write returns, and a Commit that
//     failed may have published the object.
//
// At open, the leftovers of dead writers older than a threshold are then
// removed through the Cleaner of the backend at the bottom. A program that
// gives a Store a tier of its own composes what it needs itself.
//
// # Implementations
//
// ckpt's own backends live in internal/storage: local stores objects as
// files under a directory, mem keeps them in memory for tests, s3 in an
// S3-compatible object store. This package is public so that a program can
// give a Store a tier of its own (ckpt.Options.Cache, Options.Shared);
// package storagetest holds the conformance suite every backend passes,
// ckpt's and a program's alike.
package storage
