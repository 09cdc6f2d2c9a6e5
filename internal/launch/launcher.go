package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Launcher starts the ranks of one attempt and reports how each of its
// processes ended; Run's relaunch loop, the coordinator, the injector and
// Classify are the same whatever starts them. Local starts every rank
// itself (ckpt run's default); External runs one mpirun or srun per
// attempt.
type Launcher interface {
	// Name is the launcher's name as ckpt run --launcher takes it.
	Name() string
	// Start starts the ranks of one attempt and returns once they are
	// started (or, on an error, once whatever it started is reaped). A ctx
	// done during the start-up stops it.
	Start(ctx context.Context, s Spec) (Ranks, error)
}

// Spec is one attempt's launch: what every rank runs, where, and with
// which environment.
type Spec struct {
	Ranks int
	// Nodes are the nodes of the launch, by name: rank r runs on
	// Nodes[jobenv.NodeOf(r, Ranks, len(Nodes))]. A later launch may be
	// given other nodes than the first (a failed node left out, Pool),
	// and then one node per rank (len(Nodes) == Ranks).
	Nodes []string
	// Hosts and ExcludeHosts are real hosts: those the launch is to run on
	// (nil: the launcher's choice), and those it is to leave out, whose
	// nodes failed (ExcludeHosts). An External launcher passes them on
	// (srun --exclude, mpirun's host file); Local runs on this host only.
	Hosts, ExcludeHosts []string
	// Pin is each rank's host (Pin[r] rank r's; nil: not pinned): every
	// launch after the first puts each node back on the host it ran on,
	// so that it finds its cache there. An External launcher follows it
	// (srun's arbitrary distribution, mpirun's sequential mapping); Local
	// runs every node on its own host anyway.
	Pin     []string
	Program string
	Args    []string
	// Job is the attempt's part of every rank's environment: the
	// coordinator, token and incarnation, and the job's settings. What
	// differs between ranks (rank, size, node, cache) is the launcher's to
	// add, in its own way.
	Job jobenv.Env
	// CoordFor is where rank r connects (its node's relay in tree mode).
	CoordFor func(r int) string
	// CacheRoot holds the node caches, CacheRoot/NODE.
	CacheRoot string
	// Env is added to every rank's environment after Job's variables.
	Env []string
	// Output is where rank r's output goes; Output(-1) the launcher's own
	// (mpirun's or srun's, with their ranks' output).
	Output func(r int) io.Writer
	// Lookup reads what a rank published in the attempt's coordinator
	// (jobenv.KeyProc: where a rank that the launcher did not start
	// itself runs).
	Lookup func(key string) ([]byte, bool)
}

// Ranks are one attempt's started processes.
//
// Kill, Stop and KillAll are called from Run's loop only, never
// concurrently; Ended's channel is buffered for every process.
type Ranks interface {
	// Procs is how many ends Ended delivers: one per rank (Local), or one
	// for the launcher's process, which ends with every rank (External).
	Procs() int
	// Ended delivers each process's end once.
	Ended() <-chan Ended
	// Kill kills rank r with SIGKILL, as a crash would; Stop stops it
	// with SIGSTOP, a hung rank. An error wrapping ErrNotJoined says the
	// rank cannot be found yet: try again later.
	Kill(r int) error
	Stop(r int) error
	// KillAll kills every rank of the attempt; Ended still reports each
	// process's end.
	KillAll()
}

// Restarter is Ranks that can start one rank's process again while the
// others run (Local): a rank restarted alone under Config.Uncoordinated.
type Restarter interface {
	// Restart starts a new process for rank r, whose last one ended,
	// with extra added to its environment. Its end comes on Ended like
	// the others', and Procs counts it; Kill and Stop of r reach it.
	Restart(r int, extra []string) error
}

// Ended is how one process of an attempt ended.
type Ended struct {
	// Rank is the rank the process ran, or -1 for the launcher's own
	// process (mpirun, srun), which ends with all ranks.
	Rank int
	Err  error
	// Status is the exit status, or -1 with the signal that ended it.
	Status int
	Signal syscall.Signal
}

// ErrNotJoined is wrapped by a Kill or Stop of a rank that has not yet
// said where it runs (it publishes jobenv.KeyProc as it joins).
var ErrNotJoined = errors.New("the rank has not joined yet")

// Local starts each rank as a process of its own on this machine, every
// node a directory of the cache root: ckpt run's own launcher. Each rank is
// told its rank, size, node and cache in its environment. With Hosts, each
// node's ranks run on its host (OnHosts).
type Local struct{ Hosts Hosts }

// Name is "local".
func (Local) Name() string { return "local" }

// Start starts the ranks one by one.
func (lo Local) Start(ctx context.Context, s Spec) (Ranks, error) {
	l := &localRanks{ended: make(chan Ended, s.Ranks), spec: s, hosts: lo.Hosts}
	for r := range s.Ranks {
		err := ctx.Err() // stopped during start-up: start no more
		var cmd *exec.Cmd
		var tmp string
		if err == nil {
			cmd, tmp, err = startLocal(s, r, lo.Hosts)
		}
		if err != nil {
			l.KillAll()
			for range l.procs {
				<-l.ended
			}
			return nil, err
		}
		l.procs = append(l.procs, cmd)
		l.wait(r, cmd, tmp)
	}
	return l, nil
}

// wait reports the end of rank r's process cmd on l.ended, and removes its
// temporary directory tmp.
func (l *localRanks) wait(r int, cmd *exec.Cmd, tmp string) {
	l.started++
	go func() {
		err := cmd.Wait()
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		st, sig := exitStatus(cmd.ProcessState, err)
		l.ended <- Ended{Rank: r, Err: err, Status: st, Signal: sig}
	}()
}

// Restart starts rank r's process again, as Start did with extra added
// to its environment.
func (l *localRanks) Restart(r int, extra []string) error {
	s := l.spec
	s.Env = append(slices.Clone(s.Env), extra...)
	cmd, tmp, err := startLocal(s, r, l.hosts)
	if err != nil {
		return err
	}
	l.procs[r] = cmd
	l.wait(r, cmd, tmp)
	return nil
}

// mpiTmpVar is where Open MPI (4.x) makes its session directory. Each rank
// of the local launcher that is an MPI program is an MPI singleton, and
// singletons started together race to create the same directory under
// the temp directory (/tmp/ompi.HOST.UID): the loser's MPI_Init fails with
// "File exists". On a cluster each node has a /tmp of its own; here each
// rank gets a directory of its own, removed when the rank ends.
const mpiTmpVar = "OMPI_MCA_orte_tmpdir_base"

// rankTmp makes rank r's own MPI session directory base, unless the
// user's environment (or the job's) already chose one: then "".
func rankTmp(s Spec, r int) (string, error) {
	if _, ok := os.LookupEnv(mpiTmpVar); ok {
		return "", nil
	}
	for _, kv := range s.Env {
		if strings.HasPrefix(kv, mpiTmpVar+"=") {
			return "", nil
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("ckpt-rank%d-", r))
	if err != nil {
		return "", fmt.Errorf("launch: rank %d: its temporary directory: %w", r, err)
	}
	return dir, nil
}

// startLocal starts rank r's process. tmp is the rank's own temporary
// directory, for the caller to remove when the rank ends ("" if none).
func startLocal(s Spec, r int, hosts Hosts) (cmd *exec.Cmd, tmp string, err error) {
	node := s.Nodes[jobenv.NodeOf(r, s.Ranks, len(s.Nodes))]
	cmd = exec.Command(s.Program, s.Args...)
	env := s.Job
	env.Rank, env.Size, env.Node = r, s.Ranks, node
	env.Cache = filepath.Join(s.CacheRoot, node)
	env.Coord = s.CoordFor(r)
	cmd = onHost(hosts, node, &env, cmd)
	if tmp, err = rankTmp(s, r); err != nil {
		return nil, "", err
	}
	cmd.Env = append(os.Environ(), env.Encode()...)
	if tmp != "" {
		cmd.Env = append(cmd.Env, mpiTmpVar+"="+tmp)
	}
	cmd.Env = append(cmd.Env, s.Env...)
	w := s.Output(r)
	cmd.Stdout, cmd.Stderr = w, w
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, "", fmt.Errorf("launch: rank %d: %w", r, err)
	}
	return cmd, tmp, nil
}

// localRanks are the processes Local started, procs[r] rank r's latest;
// started counts every process started (Restart adds one). The ended
// channel holds one end per rank: at most one process per rank runs, and
// Run's loop reads every end.
type localRanks struct {
	procs   []*exec.Cmd
	started int
	ended   chan Ended
	spec    Spec
	hosts   Hosts
}

func (l *localRanks) Procs() int          { return l.started }
func (l *localRanks) Ended() <-chan Ended { return l.ended }
func (l *localRanks) Kill(r int) error    { kill(l.procs[r]); return nil }
func (l *localRanks) Stop(r int) error    { stop(l.procs[r]); return nil }
func (l *localRanks) KillAll() {
	for _, p := range l.procs {
		kill(p)
	}
}

// NodeNames are the simulated nodes of a job of n nodes: node0 to
// node<n-1>.
func NodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = jobenv.NodeName(i)
	}
	return out
}
