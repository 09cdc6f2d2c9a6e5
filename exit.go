package ckpt

import (
	"errors"

	"github.com/ckpt/ckpt/internal/group"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/uncoord"
)

// ErrConfig is wrapped by the errors of a job's configuration that no
// relaunch can fix: a redundancy scheme the job's nodes cannot hold, a
// shared tier that cannot be used (a file where a directory should be, no
// permission, an object store refusing the credentials), a setting in the
// environment that does not parse, or an application's own (a problem
// that does not fit the number of ranks). Applications wrap theirs.
var ErrConfig = errors.New("configuration error")

// Exit statuses of a rank, which tell 'ckpt run' whether a relaunch can
// help (the values of sysexits.h).
const (
	// ExitConfig: a configuration error; the job is not launched again.
	ExitConfig = jobenv.ExitConfig
	// ExitJobFailed: the rank stopped because the job failed elsewhere (a
	// rank or the coordinator was lost, the job was aborted): a symptom,
	// never the cause the launcher reports.
	ExitJobFailed = jobenv.ExitJobFailed
)

// ExitStatus is the status a rank program should exit with after err:
// 0 for nil, ExitConfig for a configuration error, ExitJobFailed when the
// job failed elsewhere, jobenv.ExitCannotServe when a rank restarted alone
// under uncoordinated checkpointing cannot recover from its own checkpoint
// and message log (uncoord.ErrCannotServe: the launcher relaunches the
// whole job; 'ckpt run --strategy uncoordinated'), else 1. Under 'ckpt run' it lets the launcher give
// up at once on what a relaunch cannot fix, and name the rank that failed
// first rather than the others that only saw the job fail.
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrConfig):
		return ExitConfig
	case errors.Is(err, uncoord.ErrCannotServe):
		// Before the job's failure: a peer lost meanwhile is not the
		// cause.
		return jobenv.ExitCannotServe
	case errors.Is(err, group.ErrFailed), errors.Is(err, redundancy.ErrPeerClosed):
		return ExitJobFailed
	}
	return 1
}

// ConfigError marks err as a configuration error (errors.Is(err,
// ErrConfig)), its message unchanged: for an application's own, such as a
// problem that does not fit the number of ranks.
func ConfigError(err error) error { return configError(err) }

func configError(err error) error {
	if err == nil || errors.Is(err, ErrConfig) {
		return err
	}
	return &cfgErr{err}
}

type cfgErr struct{ err error }

func (e *cfgErr) Error() string   { return e.err.Error() }
func (e *cfgErr) Unwrap() []error { return []error{e.err, ErrConfig} }
