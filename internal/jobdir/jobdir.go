// Package jobdir owns the directory of a job run by `ckpt run`: its name
// (the job's identity), where it lives (one default root shared by every
// command), the lock held while the job runs, the record of the
// configuration its checkpoints belong to, the requests other commands
// leave for it (halt, checkpoint now) and the status it publishes.
//
// A job directory ROOT/NAME holds the node caches (node0, node1, ...), the
// staging servers' journals (staging) and the job's own files:
//
//	job.lock     flock(2)ed by the `ckpt run` that runs the job, which
//	             writes its PID in it; the kernel releases the lock on any
//	             exit, SIGKILL included, so a lock that can be taken means
//	             the job is not running
//	job.json     the configuration the checkpoints belong to (Spec); a run
//	             of the same name with another configuration is refused,
//	             so it can neither restore nor delete them
//	status.json  what the running job is doing (Status), replaced atomically
//	halt         a request to stop after the next checkpoint
//	checkpoint   a request to checkpoint at the next decision round
//
// The names of jobs obey the rule of checkpoint names (one path component,
// no leading '.', no control character), so that a name can never reach
// outside the root.
package jobdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// The job's own files in its directory.
const (
	LockFile       = "job.lock"
	SpecFile       = "job.json"
	StatusFile     = "status.json"
	HaltFile       = "halt"
	CheckpointFile = "checkpoint"
	StagingDir     = "staging"
	// TLSDir holds the job's TLS key pair (ckpt run --tls) while it runs.
	TLSDir = "tls"
	// TransparentDir holds what the ranks of ckpt run --transparent make
	// beside the caches: their programs' output, their dumps in progress.
	TransparentDir = "transparent"
)

// DefaultRoot is where jobs live when no --cache-root names one: the
// directory every command looks in by default.
func DefaultRoot() string { return filepath.Join(os.TempDir(), "ckpt-run") }

// ErrBadName is wrapped by ValidName's errors.
var ErrBadName = errors.New("invalid job name")

// ValidName checks a job name: the rule of checkpoint names
// (manifest.ValidName), so that ROOT/NAME is always a directory directly
// below ROOT.
func ValidName(name string) error {
	if err := manifest.ValidName(name); err != nil {
		return fmt.Errorf("%w: %w", ErrBadName, err)
	}
	if isJobEntry(name) {
		// A job of that name in a directory that is also a job's
		// (--cache-root of the root itself) would be taken for one of
		// that job's own entries, and deleted with them.
		return fmt.Errorf("%w: %q is the name of an entry of a job's directory", ErrBadName, name)
	}
	return nil
}

// PreflightPrefix begins the name of the file 'ckpt run' makes to see
// that a job's directory is writable before it launches anything.
const PreflightPrefix = ".ckpt-preflight-"

// Spec is what defines a job: what its checkpoints are checkpoints of.
// Two runs with the same Spec are the same job and resume from each
// other's checkpoints; runs with different Specs must never meet.
type Spec struct {
	Program    string   `json:"program"`
	Args       []string `json:"args"`
	Ranks      int      `json:"ranks"`
	Nodes      int      `json:"nodes"`
	Redundancy string   `json:"redundancy"` // "" = the store's default
	Shared     string   `json:"shared"`     // "" = none
}

func (s Spec) equal(o Spec) bool {
	return s.Program == o.Program && slices.Equal(s.Args, o.Args) && s.Ranks == o.Ranks &&
		s.Nodes == o.Nodes && s.Redundancy == o.Redundancy && s.Shared == o.Shared
}

// String is the spec as a `ckpt run` command line.
func (s Spec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-n %d --nodes %d", s.Ranks, s.Nodes)
	if s.Redundancy != "" {
		fmt.Fprintf(&b, " --redundancy %s", s.Redundancy)
	}
	if s.Shared != "" {
		fmt.Fprintf(&b, " --shared %s", s.Shared)
	}
	b.WriteString(" -- ")
	b.WriteString(s.Program)
	for _, a := range s.Args {
		b.WriteString(" ")
		b.WriteString(a)
	}
	return b.String()
}

// DefaultName is the name of a job that was given none: a readable prefix
// (the Slurm job's name when getenv finds SLURM_JOB_NAME, else the
// program's base name) and a hash of everything in the Spec, so that jobs
// differing in any of it get different directories, and the same job
// started again finds its own.
func (s Spec) DefaultName(getenv func(string) string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(s) // a struct of strings and ints: cannot fail
	prefix := getenv("SLURM_JOB_NAME")
	if prefix == "" {
		prefix = strings.TrimSuffix(filepath.Base(s.Program), filepath.Ext(s.Program))
	}
	return sanitize(prefix) + "-" + hex.EncodeToString(h.Sum(nil)[:6])
}

// sanitize makes a prefix that passes ValidName with a hash appended:
// separators and control characters become '_', leading dots go, and it
// is cut to 64 bytes.
func sanitize(p string) string {
	p = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 || r == utf8.RuneError {
			return '_'
		}
		return r
	}, p)
	p = strings.TrimLeft(p, ".")
	for len(p) > 64 {
		_, n := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-n]
	}
	if p == "" {
		p = "job"
	}
	return p
}

// Dir is a job's directory.
type Dir struct {
	Name string // the job's name (the directory's base name)
	Path string
}

// Named is the directory of job name under root; the name must be valid.
func Named(root, name string) (Dir, error) {
	if err := ValidName(name); err != nil {
		return Dir{}, err
	}
	return Dir{Name: name, Path: filepath.Join(root, name)}, nil
}

// At is the job directory at path (a --cache-root given as such).
func At(path string) Dir {
	path = filepath.Clean(path)
	return Dir{Name: filepath.Base(path), Path: path}
}

func (d Dir) file(name string) string { return filepath.Join(d.Path, name) }

// File is the path of one of the job's own files (LockFile, HaltFile, ...).
func (d Dir) File(name string) string { return d.file(name) }

// Exists says whether the directory exists.
func (d Dir) Exists() bool {
	st, err := os.Stat(d.Path)
	return err == nil && st.IsDir()
}

// ReadSpec reads the configuration recorded in the directory.
func (d Dir) ReadSpec() (Spec, error) {
	var s Spec
	b, err := os.ReadFile(d.file(SpecFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", d.file(SpecFile), err)
	}
	return s, nil
}

// isJobEntry says whether a directory entry is one a job makes: a node
// cache, the staging journals or one of the job's files. A directory of
// nothing else may be taken over as a job's.
func isJobEntry(name string) bool {
	switch name {
	case LockFile, SpecFile, StatusFile, HaltFile, CheckpointFile, StagingDir, TLSDir, TransparentDir:
		return true
	}
	if n, ok := strings.CutPrefix(name, "node"); ok && n != "" {
		return strings.Trim(n, "0123456789") == ""
	}
	// A status or configuration being written (local.WriteFile's temp
	// file, ".status.json.*.tmp"; earlier versions wrote "status.json.*"),
	// or 'ckpt run''s probe of the directory's writability left by a run
	// that died.
	for _, f := range []string{StatusFile, SpecFile} {
		if strings.HasPrefix(name, f+".") || strings.HasPrefix(name, "."+f+".") {
			return true
		}
	}
	return strings.HasPrefix(name, PreflightPrefix)
}

// ErrNotJobDir is wrapped when a directory holds files no job made: the
// job will not adopt it (and so will never delete what is in it).
var ErrNotJobDir = errors.New("not a ckpt job directory")

// ErrOtherSpec is wrapped when a directory holds a job of another
// configuration.
var ErrOtherSpec = errors.New("holds the checkpoints of another configuration")

// checkAdoptable refuses a directory with foreign entries.
func (d Dir) checkAdoptable() error {
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !isJobEntry(e.Name()) {
			return fmt.Errorf("%s: %w: it holds %q, which no job made", d.Path, ErrNotJobDir, e.Name())
		}
	}
	return nil
}

// checkSpec records spec as the directory's configuration, or refuses a
// directory that records another.
func (d Dir) checkSpec(spec Spec) error {
	old, err := d.ReadSpec()
	switch {
	case err == nil:
		if !old.equal(spec) {
			return fmt.Errorf("job %s (%s) %w: %s; run it with that configuration, choose another --job, or remove the directory",
				d.Name, d.Path, ErrOtherSpec, old)
		}
		return nil
	case !os.IsNotExist(err):
		return err
	}
	// No configuration recorded: node caches already here are of a job
	// whose configuration is unknown (an earlier ckpt's, or put here by
	// hand). Adopting them would let this job restore them, and delete
	// them when it finishes.
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "node"); ok && n != "" && e.IsDir() {
			if inside, err := os.ReadDir(d.file(e.Name())); err == nil && len(inside) > 0 {
				return fmt.Errorf("%s %w of an unknown configuration: its %s holds a cache but no %s says whose; resume it with the ckpt that made it, choose another --job or --cache-root, or remove the directory",
					d.Path, ErrOtherSpec, e.Name(), SpecFile)
			}
		}
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	return local.WriteFile(d.file(SpecFile), append(b, '\n'), fileMode)
}

// RemoveOwn removes what a job of spec made in the directory (its node
// caches, the staging journals, its files but the lock) and the directory
// too if nothing else is left: never anything it did not make.
func (d Dir) removeOwn(spec Spec) {
	for i := range spec.Nodes {
		os.RemoveAll(d.file(fmt.Sprintf("node%d", i)))
	}
	os.RemoveAll(d.file(StagingDir))
	os.RemoveAll(d.file(TLSDir))
	os.RemoveAll(d.file(TransparentDir))
	for _, f := range []string{SpecFile, StatusFile, HaltFile, CheckpointFile} {
		os.Remove(d.file(f))
	}
}

// fileMode is the mode of the job's files (SpecFile, StatusFile): 0600,
// what they have always had (they were os.CreateTemp files renamed into
// place). They are written with local.WriteFile, whole and durably, so a
// reader, or a restart after a crash, sees the old content or the new,
// never a torn job.json or status.json.
//
// Every file and directory the job makes here is its user's only (issue
// 18 §3): fileMode for files (the lock and requests too), dirMode for the
// directory.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// List finds the jobs under root: its subdirectories that hold a job's
// lock or configuration, sorted by name. A root that does not exist is an
// error (os.IsNotExist).
func List(root string) ([]Dir, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Dir
	for _, e := range entries {
		if !e.IsDir() || ValidName(e.Name()) != nil {
			continue
		}
		d := Dir{Name: e.Name(), Path: filepath.Join(root, e.Name())}
		if fileExists(d.file(SpecFile)) || fileExists(d.file(LockFile)) {
			out = append(out, d)
		}
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// CheckWritable reports why dir cannot serve as a directory the job
// writes to: it is a file, or it (or the directory it would be made in)
// cannot be written. It leaves nothing behind: the file it makes to try
// (PreflightPrefix*) is removed, and a missing dir is not made.
func CheckWritable(dir string) error {
	d := dir
	for {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				if d == dir {
					return errors.New("is a file, not a directory")
				}
				return fmt.Errorf("cannot be made: %s is a file", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("cannot be made: %v", err)
		}
		d = parent
	}
	// Writable: a file can be made in it (permissions alone do not say:
	// root, read-only mounts, ACLs).
	f, err := os.CreateTemp(d, PreflightPrefix+"*")
	if err != nil {
		if d == dir {
			return fmt.Errorf("not writable: %v", unwrapPath(err))
		}
		return fmt.Errorf("cannot be made: %s is not writable: %v", d, unwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// unwrapPath drops the *PathError's path, which the message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
