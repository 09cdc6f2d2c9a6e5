package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/internal/jobdir"
)

// A job's identity and directory on the side of `ckpt run`: which
// directory it runs in, the lock it holds there, and the status it
// publishes for `ckpt status` (the directory's layout is package jobdir's).

// jobSpec is what defines the job: what its checkpoints belong to.
func (s runSpec) jobSpec() jobdir.Spec {
	args := s.args
	if args == nil {
		args = []string{}
	}
	return jobdir.Spec{Program: s.program, Args: args, Ranks: s.ranks, Nodes: s.nodes,
		Redundancy: s.redundancy, Shared: s.shared}
}

// dir is the job's directory: its cache root.
func (s runSpec) dir() jobdir.Dir {
	d := jobdir.At(s.cacheRoot)
	if s.job != "" {
		d.Name = s.job
	}
	return d
}

// runJobDir chooses a run's job name and directory from --job and
// --cache-root: --job NAME is ROOT/NAME under the default root, --cache-root
// DIR is DIR itself, and without either the name is derived from
// everything that defines the job.
func runJobDir(job, cacheRoot string, spec jobdir.Spec) (name, dir string, err error) {
	switch {
	case job != "" && cacheRoot != "":
		return "", "", usagef("--job %s and --cache-root %s: give one (--cache-root is the job's directory itself)", job, cacheRoot)
	case cacheRoot != "":
		d := jobdir.At(cacheRoot)
		return d.Name, d.Path, nil
	case job == "":
		job = spec.DefaultName(os.Getenv)
	}
	d, err := jobdir.Named(jobdir.DefaultRoot(), job)
	if err != nil {
		return "", "", usagef("--job: %v", err)
	}
	return d.Name, d.Path, nil
}

// claim takes the job's directory for this run: its lock, and the record
// of its configuration. A job running already, a directory of another
// configuration or one holding what no job made is refused.
func (s *runSpec) claim() error {
	if s.lock != nil {
		return nil
	}
	l, err := s.dir().Acquire(s.jobSpec())
	switch {
	case errors.Is(err, jobdir.ErrNotJobDir):
		return usagef("--cache-root: %v; give a new or empty directory", err)
	case errors.Is(err, jobdir.ErrOtherSpec):
		return usageError{err}
	case err != nil:
		return err
	}
	s.lock = l
	return nil
}

// statusLine says in a few words what a job's status is.
func statusLine(st jobdir.Status) string {
	line := fmt.Sprintf("%s, attempt %d", st.State, st.Attempt)
	if st.Step != nil {
		line += fmt.Sprintf(", step %d", *st.Step)
	}
	return line
}

// jobRef is how the other commands name this job: --job NAME when it
// lives under the default root, else --cache-root DIR.
func (s runSpec) jobRef() string {
	d := s.dir()
	if filepath.Dir(d.Path) == filepath.Clean(jobdir.DefaultRoot()) && d.Name == filepath.Base(d.Path) {
		return "--job " + d.Name
	}
	return "--cache-root " + d.Path
}
