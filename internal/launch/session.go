package launch

import (
	"context"
	"os"
	"time"

	"github.com/ckpt/ckpt/flushstats"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/policy"
)

// A Session is one run of a job from its claimed directory to its end: the
// status that `ckpt status` reads, the staging servers, the relaunch loop
// (Run), the account of where failures and flushes went, and what becomes
// of the node caches. `ckpt run` and `ckpt demo` fill it from their flags
// and print what it returns.
type Session struct {
	Job    Job
	Lock   *jobdir.Lock // the job's directory, claimed; released or removed at the end
	Config Config
	Coords *Coordinators
	// Interval and Redundancy name the job's policy and scheme in its
	// status.
	Interval, Redundancy string
	// StartStaging starts the job's staging servers (Job.StagingServers
	// > 0), whose token is StageToken; OnStaging, if set, is told of them
	// once they run.
	StartStaging func() (*Staging, error)
	StageToken   string
	OnStaging    func(*Staging)
	// KeepCache keeps the node caches of a job that finished.
	KeepCache bool
}

// Outcome is what a session's job did.
type Outcome struct {
	Report
	Policy policy.State // what the checkpoint policy measured
	// Restarts counts the attempts after the first by where they restored
	// from: cache, rebuild, shared, none.
	Restarts map[string]int
	// Flush sums what the flushes to the shared tier did over the
	// attempts (non-blocking: the outcomes as the staging servers
	// reported them, WithStaged).
	Flush flushstats.Stats
	// Account says where every failure went.
	Account Accounting
	// Staged lists the flushes the staging servers finished, and
	// StagingRestarts counts the servers started again after dying.
	Staged          []StageEvent
	StagingRestarts int
}

// tlsLife is how long a job's certificate is valid: longer than any run
// of a job, which makes a new one at each.
const tlsLife = 366 * 24 * time.Hour

// Run runs the session's job to its end. The lock is released in every
// case; a job that finished, was not halted and keeps no cache has its
// directory's caches removed (only what it made: never another job's).
func (s Session) Run(ctx context.Context) (Outcome, error) {
	out := Outcome{Restarts: map[string]int{}}
	cfg := s.Config
	if s.Job.TLS {
		dir := s.Lock.Dir().File(jobdir.TLSDir)
		// The key pair lives as long as the session: a later run of the
		// job makes its own.
		defer os.RemoveAll(dir)
		tc, files, err := jobtls.New(dir, tlsLife)
		if err != nil {
			s.Lock.Release()
			return out, err
		}
		cfg.Job.TLS, s.Coords.TLS = files, tc
	}
	tracker := Track(s.Lock.Dir(), s.Interval, s.Redundancy, &cfg, s.Coords)
	var st *Staging
	if s.Job.StagingServers > 0 {
		var err error
		if st, err = s.StartStaging(); err != nil {
			tracker.Finish(Report{}, err)
			s.Lock.Release()
			return out, err
		}
		if s.OnStaging != nil {
			s.OnStaging(st)
		}
		defer st.Stop()
		s.Job.UseStaging(&cfg, st, s.StageToken)
	}
	var commits CommitLog
	commits.Watch(s.Coords)
	rep, err := Run(ctx, cfg)
	tracker.Finish(rep, err)
	out.Report, out.Policy = rep, s.Coords.State()
	if st != nil {
		// The job is over: what the servers still pull has no one to
		// serve it.
		st.Stop()
		out.Staged, out.StagingRestarts = st.Events(), st.Restarts()
	}
	out.Flush = WithStaged(rep.Flush, out.Staged)
	out.Account = Account(rep.Attempts, commits.Counts())
	out.Restarts = rep.Restarts()
	if err == nil && !s.KeepCache && !rep.Halted {
		// The job is done: its cached checkpoints served their purpose
		// (what it flushed to the shared tier stays).
		s.Lock.Remove()
	} else {
		s.Lock.Release()
	}
	return out, err
}
