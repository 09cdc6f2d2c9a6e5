package scr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/storage"
)

// plainCopies writes every rank's files of the committed dataset m at
// their paths under the prefix (collective), each file atomically: to a
// temporary name, then renamed. A file only one rank routed is that
// rank's copy. A file several ranks routed (SCR's shared-file mode, each
// rank writing its own region with pwrite) is assembled from the data of
// every rank's copy at its offsets, leaving out the copies' holes: the
// lowest of those ranks creates the temporary file at the largest size,
// each writes its data into it, and the lowest renames it. It says
// whether every rank succeeded; a failure is reported on stderr by the
// rank that had it.
func (l *Lib) plainCopies(ctx context.Context, m *manifest.Manifest) (bool, error) {
	type shared struct {
		ranks []int
		size  int64
	}
	files := map[string]*shared{}
	for _, p := range m.Parts {
		for _, f := range p.Files {
			if f.Name == engine.MessagesFile {
				continue
			}
			s := files[f.Name]
			if s == nil {
				s = &shared{}
				files[f.Name] = s
			}
			s.ranks = append(s.ranks, p.Rank)
			s.size = max(s.size, f.Size)
		}
	}
	loc, ok := storage.As[storage.Locator](l.cache)
	if !ok {
		return false, errors.New("the cache is not a directory")
	}
	var mine []error
	src := func(name string) string {
		p, _ := loc.Path(cachetier.FileObject(m.Name, l.rank, name))
		return p
	}
	dst := func(name string) string { return filepath.Join(l.prefix, Decode(name)) }
	tmp := func(name string) string { return dst(name) + ".ckpt-tmp.shared" }
	anyShared := false
	for _, f := range m.Parts[l.rank].Files {
		s := files[f.Name]
		switch {
		case s == nil:
		case len(s.ranks) == 1:
			mine = append(mine, copyAtomic(src(f.Name), dst(f.Name), l.rank))
		case s.ranks[0] == l.rank:
			mine = append(mine, createSized(tmp(f.Name), s.size))
		}
	}
	for _, s := range files {
		anyShared = anyShared || len(s.ranks) > 1
	}
	if !anyShared {
		return l.allDid(ctx, errors.Join(mine...))
	}
	// Round 1: the shared files' temporaries exist. Round 2: every rank
	// wrote its data into them. Then the lowest rank renames.
	if ok, err := l.allDid(ctx, errors.Join(mine...)); !ok || err != nil {
		return ok, err
	}
	mine = nil
	for _, f := range m.Parts[l.rank].Files {
		if s := files[f.Name]; s != nil && len(s.ranks) > 1 {
			mine = append(mine, copyData(src(f.Name), tmp(f.Name)))
		}
	}
	if ok, err := l.allDid(ctx, errors.Join(mine...)); !ok || err != nil {
		return ok, err
	}
	mine = nil
	for _, f := range m.Parts[l.rank].Files {
		if s := files[f.Name]; s != nil && len(s.ranks) > 1 && s.ranks[0] == l.rank {
			mine = append(mine, os.Rename(tmp(f.Name), dst(f.Name)))
		}
	}
	return l.allDid(ctx, errors.Join(mine...))
}

// allDid tells every rank whether every rank's step succeeded (mine is
// this rank's error, printed here).
func (l *Lib) allDid(ctx context.Context, mine error) (bool, error) {
	msg := ""
	if mine != nil {
		msg = mine.Error()
		fmt.Fprintf(os.Stderr, "SCR: rank %d: copying to the prefix: %s\n", l.rank, msg)
	}
	all, err := engine.GatherJSON(ctx, l.comm, msg)
	if err != nil {
		return false, err
	}
	for _, m := range all {
		if m != "" {
			return false, nil
		}
	}
	return true, nil
}

// copyAtomic copies src to dst through a temporary name.
func copyAtomic(src, dst string, rank int) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := fmt.Sprintf("%s.ckpt-tmp.%d", dst, rank)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// createSized creates (or empties) path at size bytes, all a hole.
func createSized(path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyData writes src's non-zero bytes into dst (created zero-filled)
// at the same offsets. A rank's copy of a shared file holds zeros, and
// holes, where other ranks' regions are, even inside the file system's
// blocks it wrote (a region need not start on a block), so only its
// non-zero bytes are its own for sure; its zeros are in dst already.
// Holes (SEEK_DATA) are skipped without reading them.
func copyData(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	err = eachData(int(in.Fd()), st.Size(), func(off, n int64) error {
		for n > 0 {
			k, err := in.ReadAt(buf[:min(int64(len(buf)), n)], off)
			if k == 0 && err != nil {
				return err
			}
			if err := writeNonZero(out, buf[:k], off); err != nil {
				return err
			}
			off, n = off+int64(k), n-int64(k)
		}
		return nil
	})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeNonZero writes the runs of non-zero bytes of b, which belongs at
// offset off, into w at their offsets.
func writeNonZero(w io.WriterAt, b []byte, off int64) error {
	for i := 0; i < len(b); {
		for i < len(b) && b[i] == 0 {
			i++
		}
		j := i
		for j < len(b) && b[j] != 0 {
			j++
		}
		if j > i {
			if _, err := w.WriteAt(b[i:j], off+int64(i)); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}
