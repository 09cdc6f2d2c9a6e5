package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Holder is a Launcher that holds what every launch of a job runs on for
// the whole job: Run calls Hold once, before the first launch, launches
// with the Launcher it returns, and calls release when it returns, on
// every path (the job finished, failed, halted, or ctx done).
type Holder interface {
	// Hold acquires what nodes nodes (spares included) need for the
	// whole job; note says what it holds (a progress line). A ctx done,
	// or stop closed, while it waits gives up the request.
	Hold(ctx context.Context, stop <-chan struct{}, nodes int, note func(string)) (l Launcher, release func(), err error)
}

// releaseTimeout bounds a release's scancel: a controller that does not
// answer must not keep ckpt run from ending.
const releaseTimeout = 30 * time.Second

// sallocGrace is how long salloc has to give up a pending request after
// SIGINT before it is killed.
const sallocGrace = 10 * time.Second

// Hold, for srun outside a Slurm allocation (no SLURM_JOB_ID, no --jobid
// in --launcher-args), acquires one allocation for the whole job, as
// SCR's scr_srun loop runs inside the allocation of a batch script:
// salloc --no-shell (SallocArgs) of the job's nodes and spares, whose job
// id every launch's srun then names (--jobid), so that each launch and
// relaunch is a step of nodes already held. Without it, each srun is a
// Slurm job of its own, and a relaunch waits in slurmctld's queue until
// the failed job's nodes have finished completing it (seconds:
// docs/PERFORMANCE.md). release cancels the allocation (scancel). Inside
// an allocation, or for mpirun, Hold holds nothing; without salloc on
// PATH it says so (note) and holds nothing.
func (e *External) Hold(ctx context.Context, stop <-chan struct{}, nodes int, note func(string)) (Launcher, func(), error) {
	none := func() {}
	if e.Kind != LauncherSrun || e.JobID != "" || os.Getenv("SLURM_JOB_ID") != "" || hasOption(e.Args, "--jobid") {
		return e, none, nil
	}
	salloc, err := exec.LookPath("salloc")
	if err != nil {
		note("srun outside a Slurm allocation, and no salloc on PATH to hold one: each launch is a Slurm job of its own")
		return e, none, nil
	}
	// A stop or cancel that came first asks Slurm for nothing: salloc,
	// started anyway, would get its SIGINT before it could give the
	// request up, which would then be left to the cancel by name.
	select {
	case <-stop:
		return nil, nil, errors.New("launch: srun outside a Slurm allocation: stopped before one was held")
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("launch: srun outside a Slurm allocation: %w before one was held", ctx.Err())
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	name := "ckpt-" + newToken()[:12]
	args := SallocArgs(nodes, name, e.Args)
	cmd := exec.CommandContext(ctx, salloc, args...)
	// salloc gives up a pending request on SIGINT (SIGKILL would leave
	// it queued, to be granted to nobody).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = sallocGrace
	out, err := cmd.CombinedOutput()
	id := SallocJobID(string(out))
	if err != nil || id == "" || ctx.Err() != nil {
		// Whatever was asked for is cancelled: by id if salloc said it,
		// else by the job's name, unique to this request.
		target := id
		if target == "" {
			target = "--name=" + name
		}
		scancel(target)
		why := strings.TrimSpace(string(out))
		if ctx.Err() != nil {
			why = "stopped while waiting for it; " + why
		}
		return nil, nil, fmt.Errorf("launch: srun outside a Slurm allocation: holding one for the job (salloc %s): %v: %s",
			strings.Join(args, " "), errOr(err, "no job id in salloc's output"), why)
	}
	held := *e
	held.JobID = id
	note(fmt.Sprintf("srun outside a Slurm allocation: holding allocation %s (%d nodes) for every launch of the job, cancelled when it ends", id, nodes))
	release := func() {
		if err := scancel(id); err != nil {
			note(fmt.Sprintf("Slurm allocation %s not released: %v (cancel it with scancel %s)", id, err, id))
		}
	}
	return &held, release, nil
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

// scancel cancels a Slurm job (an id, or --name=NAME).
func scancel(target string) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scancel", target).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scancel %s: %w: %s", target, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// SallocArgs are salloc's arguments for an allocation of nodes nodes
// named name, held for a job's launches: no shell (ckpt runs the steps
// itself), whole nodes (--exclusive: the steps place their tasks per node
// themselves, and after a shrink a node holds more tasks than at first),
// kept when one of its nodes fails (--no-kill: the next launch leaves
// that node out, --exclude). The options of args (--launcher-args) that
// say where and how long a job may run (partition, account, QOS,
// reservation, constraint, time, the nodes it must or must not run on)
// are the allocation's too: a step cannot run on a node outside its
// allocation, so a step's --nodelist the allocation lacks would fail
// every launch, and a node the user excluded would be held for nothing.
func SallocArgs(nodes int, name string, args []string) []string {
	out := []string{"--no-shell", "--no-kill", "--exclusive", fmt.Sprintf("--nodes=%d", nodes), "--job-name=" + name}
	return append(out, allocationOptions(args)...)
}

// allocOptions are srun's options that shape an allocation, long and
// short forms.
var allocOptions = map[string]string{
	"--partition": "-p", "--account": "-A", "--qos": "-q",
	"--reservation": "", "--constraint": "-C", "--time": "-t",
	"--nodelist": "-w", "--exclude": "-x",
}

// allocationOptions are the options of args that allocOptions names, as
// they are written (--opt=V, --opt V, -o V, -oV).
func allocationOptions(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
	options:
		for long, short := range allocOptions {
			switch {
			case strings.HasPrefix(a, long+"="):
				out = append(out, a)
			case a == long || (short != "" && a == short):
				if i+1 < len(args) {
					out = append(out, a, args[i+1])
					i++
				}
			case short != "" && strings.HasPrefix(a, short) && len(a) > len(short) && !strings.HasPrefix(a, "--"):
				out = append(out, a)
			default:
				continue
			}
			break options
		}
	}
	return out
}

// hasOption reports whether args hold the long option opt (--opt or
// --opt=V).
func hasOption(args []string, opt string) bool {
	for _, a := range args {
		if a == opt || strings.HasPrefix(a, opt+"=") {
			return true
		}
	}
	return false
}

var sallocID = regexp.MustCompile(`(?:Granted|Pending) job allocation (\d+)`)

// SallocJobID is the job id salloc's output names ("salloc: Granted job
// allocation 42", or "Pending job allocation 42" for a request that
// waited), "" if none.
func SallocJobID(out string) string {
	if m := sallocID.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
