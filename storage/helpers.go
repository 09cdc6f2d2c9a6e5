package storage

import (
	"context"
	"errors"
	"io"
)

// Save writes everything r yields to a new object name in b and commits it.
// On any error, including one from r, it aborts the object, so the name keeps
// its previous object (or none), and returns the error. It returns the
// number of bytes written. The copy uses the Writer's ReadFrom or r's WriteTo
// if either has one, so a local file saved to a local backend may be copied
// inside the kernel.
func Save(ctx context.Context, b Backend, name string, r io.Reader) (int64, error) {
	w, err := b.Create(ctx, name)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return n, errors.Join(err, w.Abort())
	}
	if err := w.Commit(); err != nil {
		return n, err
	}
	return n, nil
}

// Load returns the whole object name of b, in a new slice that belongs to
// the caller. It is meant for small objects (manifests, markers); stream
// large ones with Open.
func Load(ctx context.Context, b Backend, name string) ([]byte, error) {
	r, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, &Error{Op: "load", Name: name, Err: err}
	}
	return data, nil
}
