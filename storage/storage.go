package storage

import (
	"context"
	"io"
	"time"
)

// Backend is one storage location: a node's cache directory, the shared tier.
//
// All methods are safe for concurrent use by many goroutines. Operations on
// different names do not affect each other; operations on one name take
// effect one after the other, each whole: of two concurrent commits one wins,
// and a reader sees the old object or a new one, never a mix. Every
// method first checks its name with ValidName (List: ValidPrefix) and returns
// that error, wrapping ErrInvalidName, for a bad one. Other failures are
// reported as *Error wrapping a sentinel of this package where one applies
// (ErrNotExist, ErrExists, ErrClosed) or the backend's own cause; IsPermanent
// tells whether trying again can help. A method called with a context that is
// already done returns its error.
type Backend interface {
	// Create starts a new object; nothing is visible under name until Commit.
	// ctx governs the whole life of the Writer: once it is done, the backend
	// may fail Write and Commit (package local checks it in Commit).
	// Committing replaces an object that already has the name.
	Create(ctx context.Context, name string) (Writer, error)

	// Open reads length bytes of the object from offset (length < 0: to the
	// end). A range that runs past the end is cut short there, so reading
	// from or after the end yields no bytes and no error; the caller checks
	// the count it needs. A negative offset is an error. The reader sees the
	// object as it was committed when Open returned, even if it is replaced
	// or removed meanwhile (on a POSIX directory, by keeping the file open).
	// The caller must Close the reader; it is for one goroutine.
	Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error)

	// Stat returns the name and size of a committed object.
	Stat(ctx context.Context, name string) (Info, error)

	// List calls fn for every committed object whose name starts with
	// prefix, in lexical (byte-wise) order of names. The prefix is a plain
	// string prefix, not a directory: "ckpt.1" matches "ckpt.1/x" and
	// "ckpt.12/x". fn runs on the calling goroutine, once per object, never
	// concurrently, and may call the backend's methods; objects committed or
	// removed while List runs may or may not be reported. If fn returns an
	// error, List stops and returns that error unchanged.
	List(ctx context.Context, prefix string, fn func(Info) error) error

	// Remove deletes the committed object; removing a missing object is
	// ErrNotExist. It does not touch a Writer that is writing the name.
	Remove(ctx context.Context, name string) error

	// Close releases the backend's resources. Later calls of its methods
	// return ErrClosed; Close itself may be called again and returns nil.
	// Writers and readers that are still open must be finished by the
	// caller; a backend need not wait for them.
	Close() error
}

// Writer receives the bytes of one new object. It is used by one goroutine
// at a time. Write does not keep p after it returns (io.Writer's contract);
// its bytes may reach the storage only at Commit. After a Write fails,
// Commit fails too, so a short object is never committed.
type Writer interface {
	io.Writer

	// Commit makes the object durable and visible under its name atomically
	// (readers see the old object or the whole new one, never a part). If
	// Commit fails, the object is discarded as by Abort, and the name holds
	// either its previous object or, when a backend could not undo a replace
	// it had already made, nothing at all. Commit after Commit or Abort
	// returns ErrClosed.
	Commit() error

	// Abort discards the object; safe after Commit (no-op) and twice.
	Abort() error
}

// Info describes a committed object.
type Info struct {
	Name string // as passed to Create
	Size int64  // in bytes
}

// The interfaces below are optional: a backend implements those that fit it,
// and callers find them with As, which also looks through decorators.

// Locator is implemented by backends whose objects are files on a local or
// mounted file system, so that a caller can use the file directly (map it,
// hand it to another program, hard-link it into another tier). Path returns
// the file's absolute path and true for a valid name, whether or not the
// object exists, and false for an invalid name. The file must only be read;
// it may be replaced by a commit at any time.
type Locator interface {
	Path(name string) (string, bool)
}

// Cleaner is implemented by backends that can be left holding the pieces of
// objects whose writers died before Commit or Abort (temp files, incomplete
// multipart uploads). CleanTemp removes those older than olderThan, and
// returns how many it removed. Pieces of writers still at work are younger
// than any sensible olderThan (an hour, or the age of the previous run), so
// CleanTemp is safe to call while the backend is in use.
type Cleaner interface {
	CleanTemp(ctx context.Context, olderThan time.Duration) (int, error)
}

// Properties describes where backends differ in behaviour.
type Properties struct {
	// Connections is how many operations the backend serves well at once;
	// worker pools that use the backend size themselves from it.
	Connections int

	// Hierarchical is true if names are paths in a tree of directories, so
	// that one name cannot be both an object and a prefix of others ("a"
	// and "a/b"): creating the second fails with ErrExists. Object stores
	// have no such limit.
	Hierarchical bool

	// SyncsFiles is true if a Locator's backend syncs each object's file
	// before Commit publishes it: a file written at a Path by someone
	// else must then be synced by its writer too, to be as durable as the
	// backend's own.
	SyncsFiles bool
}

// Describer is implemented by backends that state their Properties.
type Describer interface {
	Properties() Properties
}

// PropertiesOf returns b's Properties, or the cautious defaults (one
// connection, hierarchical names) if b (or what it wraps) has none.
func PropertiesOf(b Backend) Properties {
	if d, ok := As[Describer](b); ok {
		return d.Properties()
	}
	return Properties{Connections: 1, Hierarchical: true}
}

// Unwrapper is implemented by decorators (ckpt's retry and throttle) that
// embed another Backend, so that As can find the optional interfaces of the
// backend underneath.
type Unwrapper interface {
	Unwrap() Backend
}

// As returns b as a T, looking through decorators that implement Unwrapper
// until it finds a backend that implements T. It returns false if none does.
func As[T any](b Backend) (T, bool) {
	for b != nil {
		if t, ok := b.(T); ok {
			return t, true
		}
		u, ok := b.(Unwrapper)
		if !ok {
			break
		}
		b = u.Unwrap()
	}
	var zero T
	return zero, false
}
