package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ckpt/ckpt/internal/tcp"
)

// Workload is one job configuration a campaign runs: the program's
// arguments (after the ckpt binary) and the job's shape.
type Workload struct {
	Name       string   // himeno, matmul
	Args       []string // e.g. example himeno --size xs --iterations 600
	Ranks      int
	Nodes      int
	Redundancy string // as ckpt run --redundancy spells it
	Staging    int    // staging servers (0: none)
	Tree       bool   // a relay per node (ckpt run --tree)
	// Interval is ckpt run --interval, in steps, so that the checkpoints
	// fall on the same steps in every run (the reference has them).
	Interval string
}

// Topology is what the schedule draws the workload's targets from.
func (w Workload) Topology() Topology {
	return Topology{Ranks: w.Ranks, Nodes: w.Nodes, StagingServers: w.Staging}
}

// ErrNothingToHit is wrapped by Job.Inject when the fault found nothing
// to act on (a corruption of the shared tier before any checkpoint
// reached it): the fault is skipped, not counted.
var ErrNothingToHit = errors.New("nothing to hit")

// Runner starts jobs. Its obligations:
//
//  1. Reference runs w to its end without faults and returns its trace's
//     events in order (a trace with a "done" event).
//  2. Start starts a job of w whose trace Job.Next reads; seq numbers the
//     campaign's runs, for names.
type Runner interface {
	Reference(ctx context.Context, w Workload) ([]Event, error)
	Start(ctx context.Context, w Workload, seq int) (Job, error)
}

// Job is a running job. Its obligations:
//
//  1. Next returns the trace's events in the order they were written,
//     waiting for the next; once the `ckpt run` process has ended and
//     every event is returned, an "exit" event (Err says why if the job
//     did not finish). It returns an error only when ctx ends.
//  2. Inject performs f and returns when it has taken effect, with the
//     time it did; a kill of the launcher includes starting a new
//     `ckpt run` of the same job. It wraps ErrNothingToHit when there was
//     nothing to act on.
//  3. Heal ends a fault that lasts (Kind.Lasts: hang-stage, shared-down,
//     partition-node, disk-full, shared-full).
//  4. Resume starts a new `ckpt run` of the same job after one ended
//     without finishing.
//  5. Close ends the job (its processes are killed and reaped) and
//     removes what it left.
type Job interface {
	Next(ctx context.Context) (Event, error)
	Inject(ctx context.Context, f Fault) (time.Time, error)
	Heal(ctx context.Context, f Fault) error
	Resume(ctx context.Context) error
	Close() error
}

// Config is a campaign.
type Config struct {
	Seed      uint64
	Duration  time.Duration // no fault is injected after it
	MaxFaults int           // 0: no limit
	// FaultsPerRun is how many faults hit one job (0: no limit); it then
	// runs to its end, its result is checked, and the next workload's
	// job starts.
	FaultsPerRun int
	Kinds        []Kind
	Workloads    []Workload // taken in turn, one per run
	// RecoverTimeout bounds the wait for a recovery or a checkpoint
	// (generous: a busy machine is slow, and a timeout is reported as
	// stuck).
	RecoverTimeout time.Duration
	Progress       io.Writer // one line per fault and recovery
	// Unavailable is the kinds left out because this machine cannot
	// inject them, and why; the result lists them.
	Unavailable map[Kind]string
	Now         func() time.Time
}

// campaign is Run's state.
type campaign struct {
	cfg    Config
	runner Runner
	tally  *Tally
	sched  *Schedule
	refs   map[string]Reference // by workload name
	start  time.Time
	faults int
	// pending is the schedule's next fault when a job ended before it
	// could be injected: the next job gets it, so that the faults stay
	// the schedule's sequence.
	pending *Fault
}

// Run runs the campaign: jobs of cfg.Workloads in turn, each hit by the
// schedule's faults (up to cfg.FaultsPerRun) and then run to its end,
// until cfg.Duration has passed or cfg.MaxFaults were injected. Every state a job reports (restored,
// committed, final) is checked against the failure-free run of its
// workload. The error is for a campaign that could not run (no
// reference, a job that did not start); what the faults did is in the
// Result.
func Run(ctx context.Context, cfg Config, runner Runner) (Result, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.RecoverTimeout <= 0 {
		cfg.RecoverTimeout = 2 * time.Minute
	}
	if len(cfg.Kinds) == 0 || len(cfg.Workloads) == 0 {
		return Result{}, errors.New("torture: no fault kinds or no workloads")
	}
	c := &campaign{cfg: cfg, runner: runner, tally: NewTally(cfg.Seed), sched: NewSchedule(cfg.Seed, cfg.Kinds),
		refs: map[string]Reference{}, start: cfg.Now()}
	var err error
	for seq := 1; !c.over() && err == nil; seq++ {
		err = c.run(ctx, cfg.Workloads[(seq-1)%len(cfg.Workloads)], seq)
	}
	res := c.tally.Result()
	for k, why := range cfg.Unavailable {
		res.Unavailable[k] = why
	}
	if len(cfg.Workloads) > 0 {
		res.Redundancy = cfg.Workloads[0].Redundancy
	}
	return res, err
}

func (c *campaign) over() bool {
	return c.cfg.Now().Sub(c.start) >= c.cfg.Duration || (c.cfg.MaxFaults > 0 && c.faults >= c.cfg.MaxFaults)
}

func (c *campaign) say(format string, a ...any) {
	fmt.Fprintf(c.cfg.Progress, "torture %7.2fs  %s\n", c.cfg.Now().Sub(c.start).Seconds(), fmt.Sprintf(format, a...))
}

// reference is w's failure-free run, run once per campaign.
func (c *campaign) reference(ctx context.Context, w Workload) (Reference, error) {
	if ref, ok := c.refs[w.Name]; ok {
		return ref, nil
	}
	c.say("%s: failure-free reference run", w.Name)
	events, err := c.runner.Reference(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("torture: %s's failure-free run: %w", w.Name, err)
	}
	ref, err := NewReference(events)
	if err != nil {
		return nil, fmt.Errorf("torture: %s: %w", w.Name, err)
	}
	c.refs[w.Name] = ref
	return ref, nil
}

// jobRun is one run of a workload: its job, its reference, and what the
// campaign knows of its checkpoints.
type jobRun struct {
	*campaign
	w         Workload
	job       Job
	ref       Reference
	red       Redundancy
	committed int64 // step of the newest checkpoint committed or restored
	begun     bool  // the job's first start was seen
	since     int   // checkpoints committed since the job started or recovered
	finished  bool  // its trace said done
	ended     bool  // ckpt run exited
	resumes   int
	injected  int // faults injected into this job
}

// run runs one job of w until it ends or the campaign is over.
func (c *campaign) run(ctx context.Context, w Workload, seq int) error {
	ref, err := c.reference(ctx, w)
	if err != nil {
		return err
	}
	red, err := NewRedundancy(w.Redundancy, w.Ranks, w.Nodes)
	if err != nil {
		return fmt.Errorf("torture: %s: %w", w.Name, err)
	}
	job, err := c.runner.Start(ctx, w, seq)
	if err != nil {
		return fmt.Errorf("torture: start %s: %w", w.Name, err)
	}
	defer job.Close()
	c.tally.Run(w.Name)
	c.say("run %d: %s, %d ranks on %d nodes, %s, %d staging servers", seq, w.Name, w.Ranks, w.Nodes, w.Redundancy, w.Staging)
	r := &jobRun{campaign: c, w: w, job: job, ref: ref, red: red}
	for !c.over() && !r.ended && (c.cfg.FaultsPerRun == 0 || r.injected < c.cfg.FaultsPerRun) {
		f := c.pending
		if f == nil {
			next := c.sched.Next(w.Topology())
			f = &next
		}
		c.pending = f
		if err := r.fault(ctx, *f); err != nil {
			return err
		}
	}
	// No more faults: the job runs to its end, and its result is checked.
	if err := r.until(ctx, func() bool { return false }); err != nil {
		return err
	}
	if r.finished {
		c.tally.Finished()
	}
	return ctx.Err()
}

// next reads the job's next event and checks it: every state against
// the reference, a restart no fault caused, the job's end. A job that
// ended without finishing is started again (a few times).
func (r *jobRun) next(ctx context.Context, deadline time.Time) (Event, error) {
	tctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	e, err := r.job.Next(tctx)
	if err != nil {
		return e, err
	}
	switch e.Kind {
	case "checkpoint":
		r.committed, r.since = e.Step, r.since+1
		r.report(r.tally.Check(r.ref, e))
	case "done":
		r.finished = true
		r.report(r.tally.Check(r.ref, e))
	case "exit":
		if r.finished || r.resumes >= 3 {
			r.ended = true
			if !r.finished {
				r.report(r.tally.JobFailed(e.Err))
			}
			break
		}
		r.report(r.tally.JobFailed(e.Err))
		r.resumes++
		if err := r.job.Resume(ctx); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (r *jobRun) report(problem string) {
	if problem != "" {
		r.say("PROBLEM: %s", problem)
	}
}

// restored accounts for a recovery; f is the fault that caused it (nil:
// none did).
func (r *jobRun) restored(f *Fault, at time.Time, e Event, damage Damage) {
	r.report(r.tally.Check(r.ref, e))
	r.report(r.tally.Recovered(f, at, e, r.committed, damage, r.red))
	what := "restart no fault caused"
	if f != nil {
		what = f.String()
	}
	r.say("recovered from %s: step %d from %s in %.2fs", what, e.Step, e.Source(), e.At.Sub(at).Seconds())
	// The restored checkpoint is the newest the job has now: what it
	// committed later is gone or will be committed again.
	r.committed = e.Step
	r.since = 0
}

// waitCheckpoints reads events until the job committed n checkpoints
// since it last started or recovered. It returns false if the job ended
// or the campaign is over first.
func (r *jobRun) waitCheckpoints(ctx context.Context, n int) (bool, error) {
	err := r.until(ctx, func() bool { return r.since >= n || r.over() })
	return err == nil && !r.ended && r.since >= n, err
}

// until reads events until stop says so or the job ended; a restart on
// the way is one no fault caused.
func (r *jobRun) until(ctx context.Context, stop func() bool) error {
	if stop() {
		return nil
	}
	return r.await(ctx, "its last event", func(e Event) bool {
		switch {
		case e.Kind == "started" && !r.begun:
			r.begun = true
			r.report(r.tally.Check(r.ref, e))
		case e.Kind == "restored" || e.Kind == "started":
			r.restored(nil, e.At, e, Damage{})
		}
		return stop()
	})
}

// await hands the job's events to handle until it says done or the job
// ended. A job with no event for the recovery timeout after what is
// stuck: it is given up.
func (r *jobRun) await(ctx context.Context, what string, handle func(Event) bool) error {
	for !r.ended {
		e, err := r.next(ctx, r.cfg.Now().Add(r.cfg.RecoverTimeout))
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				r.report(r.tally.Stuck(what, r.cfg.RecoverTimeout))
				return r.endJob()
			}
			return err
		}
		if handle(e) {
			return nil
		}
	}
	return nil
}

// endJob gives up on a job that stopped progressing.
func (r *jobRun) endJob() error {
	r.ended = true
	return r.job.Close()
}

// fault waits for the point the schedule chose, injects f and waits for
// the job to recover.
func (r *jobRun) fault(ctx context.Context, f Fault) error {
	ok, err := r.waitCheckpoints(ctx, f.After)
	if err != nil || !ok {
		return err
	}
	if err := sleep(ctx, f.Delay); err != nil {
		return err
	}
	r.pending = nil
	at, err := r.job.Inject(ctx, f)
	if errors.Is(err, ErrNothingToHit) {
		// The next fault waits for checkpoints of its own: reading them
		// is also how a job that ended meanwhile is noticed.
		r.since = 0
		r.tally.Skip(f)
		r.say("fault %s skipped: %v", f, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("torture: inject %s: %w", f, err)
	}
	r.faults++
	r.injected++
	r.tally.Injected(f)
	r.say("fault %s injected (newest committed step %d)", f, r.committed)
	if f.Kind == Hostile {
		return r.rideOutAttacks(ctx, f, at)
	}
	var damage Damage
	damage.Add(f, r.red)
	if !f.Kind.Restarts() {
		return r.rideOut(ctx, f, at)
	}
	return r.await(ctx, f.String(), func(e Event) bool {
		if e.Kind == "restored" || e.Kind == "started" {
			r.restored(&f, at, e, damage)
			return true
		}
		return false
	})
}

// rideOut waits while a fault that forces no restart lasts, heals it, and
// waits for the job's next checkpoint: the recovery. A restart on the way
// (the fault did force one) is accounted as the fault's recovery. A job
// that finishes first rode the fault out too, its end the recovery: its
// result is checked like any state (a fast job often ends within a
// fault's hold).
func (r *jobRun) rideOut(ctx context.Context, f Fault, at time.Time) error {
	if f.Kind.Lasts() {
		if err := sleep(ctx, f.Hold); err != nil {
			return err
		}
		if err := r.job.Heal(ctx, f); err != nil {
			return fmt.Errorf("torture: heal %s: %w", f, err)
		}
		r.say("fault %s healed", f)
	}
	healed := r.cfg.Now()
	return r.await(ctx, f.String(), func(e Event) bool {
		switch {
		case e.Kind == "restored" || e.Kind == "started":
			r.restored(&f, at, e, Damage{})
			return true
		case e.Kind == "checkpoint" && !e.At.Before(healed):
			r.tally.Healed(f, at, e)
			r.say("rode out %s: step %d committed %.2fs after it", f, e.Step, e.At.Sub(at).Seconds())
			r.since = 0
			return true
		case e.Kind == "done":
			r.tally.Healed(f, at, e)
			r.say("rode out %s: the job finished %.2fs after it", f, e.At.Sub(at).Seconds())
			return true
		}
		return false
	})
}

// sleep waits d, the schedule's random delay before a fault or how long
// a fault lasts (not a synchronization: any length is correct).
func sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		tcp.Sleep(ctx.Done(), d)
	}
	return ctx.Err()
}
