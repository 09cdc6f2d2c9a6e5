package storage

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"
)

// ErrNotExist reports that no committed object has the name. It matches
// fs.ErrNotExist too: errors.Is(err, fs.ErrNotExist) holds for every error
// that wraps it.
var ErrNotExist error = notExist{}

// ErrInvalidName reports a name that ValidName or ValidPrefix rejects. The
// error that wraps it quotes the name and says what is wrong with it.
var ErrInvalidName = errors.New("invalid object name")

// ErrExists reports that an object cannot be created because its name
// collides with something already there, for example a file-system backend
// asked for "a" while "a/b" exists (see Properties.Hierarchical).
var ErrExists error = exists{}

// ErrClosed reports a call on a Backend after its Close, or on a Writer
// after its Commit or Abort.
var ErrClosed = errors.New("storage closed")

type notExist struct{}

func (notExist) Error() string        { return "object does not exist" }
func (notExist) Is(target error) bool { return target == fs.ErrNotExist }

type exists struct{}

func (exists) Error() string        { return "name collides with an existing object or directory" }
func (exists) Is(target error) bool { return target == fs.ErrExist }

// Error records a failed operation on one object, like fs.PathError.
// Backends return it for every failure except an invalid name, whose error
// (from ValidName) already quotes the name.
type Error struct {
	Op   string // "create", "write", "commit", "open", "stat", "list", "remove", ...
	Name string // the object name, or the prefix for "list"
	Err  error  // the cause: a sentinel of this package or the backend's own error
}

func (e *Error) Error() string {
	return "storage: " + e.Op + " " + strconv.Quote(e.Name) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Permanent marks err as permanent, so that IsPermanent reports true for it
// and for every error that wraps it. Backends call it at the source, where
// they know that repeating the call cannot help (an object store's "access
// denied", a checksum the server rejected). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// permanentErrnos are the errors of the operating system that another try
// will not cure: the disk or quota is full, the file system is read-only, or
// the caller lacks the permission.
var permanentErrnos = []syscall.Errno{
	syscall.ENOSPC,
	syscall.EDQUOT,
	syscall.EROFS,
	syscall.EACCES,
	syscall.EPERM,
}

// IsPermanent reports whether retrying the operation that returned err is
// pointless, so that a retrying decorator gives up at once. It is true for
// errors marked by Permanent, for this package's sentinels (ErrNotExist,
// ErrInvalidName, ErrExists, ErrClosed), for fs.ErrPermission and for the
// system errors ENOSPC, EDQUOT, EROFS, EACCES and EPERM anywhere in err's
// chain (fs.ErrNotExist and fs.ErrExist count as the sentinels they match).
// It is false for nil, for context errors and for everything else,
// which may be transient (a timeout, a reset connection, EIO on a network
// file system).
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var p *permanentError
	if errors.As(err, &p) {
		return true
	}
	for _, target := range []error{fs.ErrNotExist, ErrInvalidName, fs.ErrExist, ErrClosed, fs.ErrPermission} {
		if errors.Is(err, target) {
			return true
		}
	}
	for _, errno := range permanentErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
