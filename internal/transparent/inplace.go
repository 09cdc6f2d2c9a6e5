package transparent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/internal/compress"
)

// In place: when the checkpoint's files live in a directory of the node
// cache (the engine's routed files, Checkpoint.Path), CRIU writes its
// images straight into it and restores from it, and no byte of an image
// is copied on either side (issue 19's goals: a copy of 1 GiB costs as
// much as CRIU's dump itself). The scratch directory then only takes
// CRIU's logs, and the restored images that had to be decompressed.
//
// A checkpoint that cannot be written in place (Files without Path, a
// cache that is not a directory) falls back to dumping into the scratch
// directory and storing a copy (store, fetch).

// pathFiles is Files that can route a file: Path returns where, in the
// node cache, the file must be written before the checkpoint commits
// (engine.Checkpoint.Path). All of a rank's files of one checkpoint lie
// in one directory.
type pathFiles interface {
	Path(name string) (string, error)
}

// pathRestored is Restored whose files can be read where they are, in
// the node cache (engine.Restored.Path): the engine verified every byte
// of them against the manifest before Restart returned, rebuilt ones
// included (a rebuild writes the lost files back into the cache).
type pathRestored interface {
	Path(file string) (string, error)
}

// errNotInPlace is wrapped by inPlace when the restored images cannot be
// read where they are (a file the engine stored compressed, a cache that
// is not a directory): the restore copies them out instead (fetch).
var errNotInPlace = errors.New("the images cannot be read in place")

// zstdSuffix names the compressed twin of an image while it is written,
// beside it: a crash leaves it in a directory of no committed checkpoint.
const zstdSuffix = ".zst-partial"

// clearDir removes what dir holds: a dump writes into an empty directory,
// and only its own images become the checkpoint's. What a crashed dump
// left in the cache under the same checkpoint name (a relaunch comes back
// to the same step, and names its checkpoint as before) goes.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// isImage says whether a file CRIU left in its images directory is one of
// the images (not a log, not ckpt's own).
func isImage(e os.DirEntry) bool {
	name := e.Name()
	return e.Type().IsRegular() && !strings.HasSuffix(name, ".log") && !strings.HasSuffix(name, zstdSuffix) &&
		name != MetaFile && !strings.HasPrefix(name, "stats-")
}

// storeInPlace makes the images CRIU wrote into dir, the checkpoint's
// directory in the cache, files of the checkpoint (f.Path), compressing
// in place those whose sample says it pays (compress.go), and returns
// their names and those of the compressed ones. Only the sample of an
// image that does not pay is read; one that pays is written once more,
// compressed, and replaces the raw one.
func (s *supervisor) storeInPlace(f pathFiles, dir string) (names, compressed []string, err error) {
	return s.eachImage(dir, func(enc *zstd.Encoder, name, path string) (raw, stored int64, z bool, err error) {
		p, err := f.Path(name)
		if err != nil {
			return 0, 0, false, err
		}
		if p != path {
			return 0, 0, false, fmt.Errorf("the cache routes it to %s, not beside the others in %s", p, dir)
		}
		return compressInPlace(enc, path)
	})
}

// eachImage stores each image of dir (isImage) with store, which is
// given an encoder to reuse, the image's name and its path, and returns
// the images' sizes and whether it stored the image compressed. It
// returns the images' names and those of the compressed ones, and
// reports their sizes (s.rep). A dump without images fails.
func (s *supervisor) eachImage(dir string, store func(enc *zstd.Encoder, name, path string) (raw, stored int64, z bool, err error)) (names, compressed []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	enc, err := newEncoder()
	if err != nil {
		return nil, nil, err
	}
	defer enc.Close()
	var c Compression
	for _, e := range entries {
		if !isImage(e) {
			continue
		}
		name := e.Name()
		raw, stored, z, err := store(enc, name, filepath.Join(dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("image %s: %w", name, err)
		}
		names = append(names, name)
		if z {
			compressed = append(compressed, name)
		}
		c.add(raw, stored, z)
	}
	if len(names) == 0 {
		return nil, nil, errors.New("CRIU wrote no images")
	}
	s.rep.ImageBytes, s.rep.Compression = c.RawBytes, c
	return names, compressed, nil
}

// openImage opens the image at path and says its size.
func openImage(path string) (*os.File, int64, error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := r.Stat()
	if err != nil {
		r.Close()
		return nil, 0, err
	}
	return r, fi.Size(), nil
}

// compressInPlace replaces the image at path by its zstd frame when its
// sample says it pays, and returns its sizes and the choice.
func compressInPlace(enc *zstd.Encoder, path string) (raw, stored int64, compressed bool, err error) {
	r, raw, err := openImage(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer r.Close()
	if raw < compress.MinSize {
		return raw, raw, false, nil
	}
	s, err := sample(r, raw)
	if err != nil {
		return raw, 0, false, err
	}
	if !compress.ZstdPays(s, raw) {
		return raw, raw, false, nil
	}
	tmp := path + zstdSuffix
	w, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return raw, 0, false, err
	}
	cw := &countWriter{w: w}
	enc.Reset(cw)
	_, err = io.Copy(enc, r)
	err = errors.Join(err, enc.Close(), w.Close())
	if err == nil {
		// The engine syncs the file and its directory at commit.
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return raw, cw.n, true, err
	}
	return raw, cw.n, true, nil
}

// inPlace finds the restored checkpoint's images where they are in the
// cache, for CRIU, and returns the directory to restore from and a new
// scratch directory for CRIU's logs (the caller removes it). Images
// stored compressed are decompressed into the scratch directory (read
// through res.Open, which checks their hash once more), beside links to
// the others, and CRIU restores from there; else it restores from the
// cache's directory itself, which it only reads.
func (s *supervisor) inPlace(res Restored, loc pathRestored, m Meta) (images, work string, err error) {
	var dir string
	paths := make([]string, len(m.Images))
	for i, name := range m.Images {
		p, err := loc.Path(name)
		if err != nil {
			return "", "", fmt.Errorf("%w: %w", errNotInPlace, err)
		}
		if filepath.Base(p) != name || (dir != "" && filepath.Dir(p) != dir) {
			return "", "", fmt.Errorf("%w: image %s: the cache holds it at %s, not beside the others", errNotInPlace, name, p)
		}
		dir, paths[i] = filepath.Dir(p), p
	}
	if err := os.MkdirAll(s.cfg.Scratch, 0o700); err != nil {
		return "", "", err
	}
	if work, err = os.MkdirTemp(s.cfg.Scratch, "restore-"); err != nil {
		return "", "", err
	}
	if len(m.Compressed) == 0 {
		return dir, work, nil
	}
	for i, name := range m.Images {
		if slices.Contains(m.Compressed, name) {
			err = copyOut(res, name, filepath.Join(work, name), true)
		} else {
			err = os.Symlink(paths[i], filepath.Join(work, name))
		}
		if err != nil {
			os.RemoveAll(work)
			return "", "", fmt.Errorf("checkpoint %s: image %s: %w", res.Name(), name, err)
		}
	}
	return work, work, nil
}
