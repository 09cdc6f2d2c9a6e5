package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/wire"
)

func newCoordinatorCmd() *cobra.Command {
	c := leaf("coordinator --ranks N [--listen ADDR] [--tls] [--token T] [--incarnation I] [--interval P] [--join-timeout D]", "Run a job's coordinator for ranks started by another launcher (srun, mpirun)", coordinatorLong, "")
	fs := c.Flags()
	f := &coordinatorFlags{
		changed: fs.Changed,
		ranks:   fs.Int("ranks", 0, "ranks of the job (required)"),
		listen: fs.String("listen", defaultCoordinatorListen, "address to listen on: loopback by default, so that no other machine reaches the job's "+
			"coordinator; for ranks on other machines give an address they reach (--listen 0.0.0.0:7077), with --tls"),
		tls: fs.Bool("tls", false, "mutual TLS with the ranks: a key pair of the job's own, made in a new directory of $TMPDIR readable by "+
			"this user only and removed at exit (or the pair "+jobenv.VarTLSCA+", "+jobenv.VarTLSCert+" and "+jobenv.VarTLSKey+" name), "+
			"printed with the ranks' environment; for ranks on other machines, on a file system they share"),
		token:     fs.String("token", "", "the job's secret (default: a random one, printed)"),
		inc:       fs.Uint64("incarnation", 0, "the launch's number: 0, then one more per relaunch"),
		interval:  fs.String("interval", "auto", "checkpoint policy the ranks decide with (give them the same CKPT_INTERVAL)"),
		heartbeat: durationFlag(fs, "heartbeat-timeout", "a rank silent this long has failed (default 30s)"),
		join:      durationFlag(fs, "join-timeout", "how long the ranks may take to join, from the coordinator's start (default 10m)"),
	}
	return runs(c, f)
}

// defaultCoordinatorListen is where ckpt coordinator listens unless told:
// loopback, as every listener of a job on one machine; ranks on
// other machines need an address given on purpose.
const defaultCoordinatorListen = "127.0.0.1:7077"

// coordinatorTLSLife is how long the key pair of --tls is valid: longer
// than any job (each coordinator makes its own), as ckpt run's.
const coordinatorTLSLife = 366 * 24 * time.Hour

// coordinatorLong is the help of 'ckpt coordinator'.
const coordinatorLong = `Runs the coordinator of one launch of a job whose ranks another launcher
starts — srun, mpirun — and prints the environment the ranks need. Ranks
take their rank and size from the launcher (the first of
OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE and SLURM_PROCID/SLURM_NTASKS
set), join with ckpt.Join, and reach
each other at their host names (CKPT_ADVERTISE overrides). The coordinator
exits when every rank has finished (status 0) or the job fails (status 1,
with the reason); a batch script relaunches the job from its checkpoints by
starting a coordinator with the next --incarnation and the ranks again.

Ranks may start far apart: those that joined wait, unbothered, until every
rank has. If some have not joined within --join-timeout (default 10m), the
job fails naming them, and the coordinator exits 1.

The coordinator listens on loopback (127.0.0.1:7077) unless --listen says
otherwise: it takes only the job's token, but on one machine nothing else
needs to reach it. Ranks on other machines need an address they reach;
there, --tls makes the job's traffic mutual TLS with a key pair of the
job's own (the coordinator prints ` + jobenv.VarTLSCA + `, ` + jobenv.VarTLSCert + ` and
` + jobenv.VarTLSKey + ` with the rest; the files must be where the ranks read them).

  ckpt coordinator --ranks 4 > coord.env &
  mpirun -n 4 env $(cat coord.env) ./app
  TMPDIR=$HOME/tmp ckpt coordinator --ranks 64 --listen 0.0.0.0:7077 --tls > coord.env &
  srun -n 64 env $(cat coord.env) ./app`

// coordinatorFlags are the flags of ckpt coordinator.
type coordinatorFlags struct {
	ranks                   *int
	listen, token, interval *string
	tls                     *bool
	inc                     *uint64
	heartbeat, join         *quantity
	changed                 func(name string) bool // the flag was given
}

// run checks the flags (a bad one is a usage error), starts the
// coordinator, prints the ranks' environment and waits for the job's end.
func (f *coordinatorFlags) run(c *cobra.Command) error {
	co, err := launch.CoordinatorOptions{Ranks: *f.ranks, Listen: *f.listen, Interval: *f.interval,
		Heartbeat: f.heartbeat.v, JoinTimeout: f.join.v, Given: f.changed}.Coordinators()
	if err != nil {
		return usageError{err}
	}
	tok := *f.token
	if tok == "" {
		tok = launch.NewToken()
	}
	var files jobtls.Files
	if *f.tls {
		var cleanup func()
		if co.TLS, files, cleanup, err = coordinatorTLS(); err != nil {
			return err
		}
		defer cleanup()
	}
	stderr := c.ErrOrStderr()
	co.OnNotice = func(_ uint64, n coord.Notice) {
		// A rank lost before the start is not a failure yet (a restarted
		// one may take its place), but the operator should see it rather
		// than wait in silence.
		if n.Kind == coord.NoticeDropped {
			fmt.Fprintf(stderr, "ckpt coordinator: ranks %s left before the job started (%s); waiting for them to join again\n",
				wire.FormatRanks(n.Ranks), n.Reason)
		}
	}
	a, err := co.New(*f.inc, tok)
	if err != nil {
		return err
	}
	defer a.Close()
	host, port, _ := net.SplitHostPort(a.Addr())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	w := c.OutOrStdout()
	env := jobenv.Env{Coord: net.JoinHostPort(host, port), Token: tok, Incarnation: *f.inc, Interval: &co.Policy, TLS: files}
	for _, kv := range env.Encode() {
		fmt.Fprintln(w, kv)
	}
	select {
	case <-a.Done():
	case <-c.Context().Done():
		return c.Context().Err()
	}
	if err := a.Err(); err != nil {
		return fmt.Errorf("the job failed: %w", err)
	}
	fmt.Fprintln(stderr, "ckpt coordinator: every rank finished")
	return nil
}

// coordinatorTLS is the job's TLS for --tls: the pair the environment
// names (as the ranks' variables do), or a new one in a new private
// directory, which cleanup removes.
func coordinatorTLS() (*jobtls.Config, jobtls.Files, func(), error) {
	env, err := jobenv.Lookup(os.LookupEnv)
	if err != nil {
		var je *jobenv.Error
		if errors.As(err, &je) && (je.Name == jobenv.VarTLSCA || je.Name == jobenv.VarTLSCert || je.Name == jobenv.VarTLSKey) {
			return nil, jobtls.Files{}, nil, usageError{fmt.Errorf("--tls: %w", err)}
		}
		env = jobenv.Env{} // another variable's problem is the ranks'
	}
	if env.TLS != (jobtls.Files{}) {
		tc, err := jobtls.Load(env.TLS)
		if err != nil {
			return nil, jobtls.Files{}, nil, usageError{fmt.Errorf("--tls: %w", err)}
		}
		return tc, env.TLS, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "ckpt-tls-") // 0700
	if err != nil {
		return nil, jobtls.Files{}, nil, fmt.Errorf("--tls: %w", err)
	}
	tc, files, err := jobtls.New(dir, coordinatorTLSLife)
	if err != nil {
		os.RemoveAll(dir)
		return nil, jobtls.Files{}, nil, fmt.Errorf("--tls: %w", err)
	}
	return tc, files, func() { os.RemoveAll(dir) }, nil
}
