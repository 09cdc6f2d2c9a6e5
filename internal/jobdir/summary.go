package jobdir

import (
	"errors"
	"os"
	"strings"
)

// Summary is what `ckpt ls` shows of one job.
type Summary struct {
	Dir
	PID     int   // the PID of the run holding the lock, if Running
	Running bool  // a run holds the job's lock
	Spec    *Spec // the configuration its checkpoints belong to; nil if unreadable
	// Checkpoints and Newest are what Counter found: how many checkpoints
	// the job's node caches hold, and the newest's name ("" if none);
	// CountErr is its error.
	Checkpoints int
	Newest      string
	CountErr    error
}

// Counter counts the checkpoints in a job's directory, and names the
// newest. It reads the caches, which this package does not know.
type Counter func(dir string) (n int, newest string, err error)

// Summarize lists the jobs under root (List) and summarises each. A root
// that does not exist holds no jobs.
func Summarize(root string, count Counter) ([]Summary, error) {
	jobs, err := List(root)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	out := make([]Summary, len(jobs))
	for i, d := range jobs {
		s := Summary{Dir: d}
		s.PID, s.Running, _ = d.Holder()
		if sp, err := d.ReadSpec(); err == nil {
			s.Spec = &sp
		}
		s.Checkpoints, s.Newest, s.CountErr = count(d.Path)
		out[i] = s
	}
	return out, nil
}

// ErrNoJob is Only's error when root holds no job.
var ErrNoJob = errors.New("no jobs")

// AmbiguousError is Only's error when root holds several jobs; Names
// lists them.
type AmbiguousError struct{ Names []string }

func (e *AmbiguousError) Error() string { return "several jobs: " + strings.Join(e.Names, ", ") }

// Only is the one job under root: the one running, if preferRunning and
// one runs, or else the only one there is. A root that does not exist
// holds no jobs (ErrNoJob); several are an *AmbiguousError.
func Only(root string, preferRunning bool) (Dir, error) {
	jobs, err := List(root)
	if err != nil && !os.IsNotExist(err) {
		return Dir{}, err
	}
	if preferRunning {
		var running []Dir
		for _, d := range jobs {
			if _, ok, _ := d.Holder(); ok {
				running = append(running, d)
			}
		}
		if len(running) > 0 {
			jobs = running
		}
	}
	switch len(jobs) {
	case 0:
		return Dir{}, ErrNoJob
	case 1:
		return jobs[0], nil
	}
	names := make([]string, len(jobs))
	for i, d := range jobs {
		names[i] = d.Name
	}
	return Dir{}, &AmbiguousError{names}
}
