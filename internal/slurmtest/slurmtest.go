// Package slurmtest starts a small Slurm cluster on this machine for the
// tests of ckpt's srun launcher: a munged with a key of its own, one
// slurmctld and several slurmd, each slurmd a node of its own name
// (n1, n2, ...) on its own port (Slurm's "multiple slurmd" mode, which
// Debian's slurm-wlm is built with), all on loopback, with their
// configuration, state, spool and logs in a temporary directory. Clients
// (srun, salloc, squeue, scontrol) find the cluster through SLURM_CONF
// (Env); the daemons are the package's own child processes, ended by
// Close.
//
// The cluster has no accounting, no cgroups (proctrack/linuxproc,
// task/none) and no prolog: enough to allocate nodes and run steps,
// which is what ckpt run --launcher srun does.
//
// A machine without Slurm, or on which it cannot start, skips the tests
// loudly ("SKIPPED: ..."); with CKPT_REQUIRE_SLURM=1 they fail instead,
// so that a machine that is meant to run them (CI) cannot lose them
// silently. scripts/slurm.sh installs the packages (Debian: slurm-wlm,
// munge).
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// EnvRequire names the variable that, set to 1, makes a machine on which
// the cluster cannot start fail the tests rather than skip them.
const EnvRequire = jobenv.VarRequireSlurm

// Required reports whether the tests must run: $CKPT_REQUIRE_SLURM is 1.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Programs are the Slurm and MUNGE programs the cluster needs.
var Programs = []string{"munged", "slurmctld", "slurmd", "slurmstepd", "srun", "salloc", "sinfo", "squeue", "scontrol", "scancel"}

// StartTimeout bounds the cluster's start (its nodes idle) on a busy
// machine; it only has to end a start that will not happen. Two minutes
// were once not enough for a cluster's start beside a CPU hog on a
// loaded 2-core machine (scripts/cpuhog.sh, load average over 15).
const StartTimeout = 5 * time.Minute

// Options shape the cluster.
type Options struct {
	// Nodes is the number of slurmd (nodes n1 to nN); CPUs each one's
	// CPUs (Slurm is told so: config_overrides, whatever this machine
	// has).
	Nodes, CPUs int
}

// Cluster is a running cluster.
type Cluster struct {
	// Dir holds everything: slurm.conf, munge.key, the state, spool and
	// log files.
	Dir string
	// Conf is slurm.conf's path.
	Conf string
	// Names are the nodes', n1 to nN.
	Names []string
	// Killed says which daemons Close had to kill because they did not
	// stop on SIGTERM in time (a loaded machine); Close still succeeds.
	Killed []string
	procs  []*exec.Cmd
}

// Env is what a client of the cluster needs in its environment.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// Config is the text of slurm.conf for a cluster in dir whose controller
// runs on host (this machine's name, which slurmctld checks) at port
// ctld, with one node per port of nodes, each of cpus CPUs.
func Config(dir, host string, ctld int, nodes []int, cpus int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("# A test cluster of ckpt's internal/slurmtest.")
	p("ClusterName=ckpttest")
	p("SlurmctldHost=%s(127.0.0.1)", host)
	p("SlurmctldPort=%d", ctld)
	// The tests run as root, and so do the daemons.
	p("SlurmUser=root")
	p("SlurmdUser=root")
	p("AuthType=auth/munge")
	p("CredType=cred/munge")
	p("AuthInfo=socket=%s", filepath.Join(dir, "munge.sock"))
	p("StateSaveLocation=%s", filepath.Join(dir, "state"))
	p("SlurmdSpoolDir=%s", filepath.Join(dir, "spool", "%n"))
	// Each node's temporary directory of its own: Slurm's PMIx plugin
	// (srun --mpi=pmix) makes a step's directory there, named by job and
	// step only, which the nodes sharing one machine would each make.
	p("TmpFS=%s", filepath.Join(dir, "tmp", "%n"))
	p("SlurmctldPidFile=%s", filepath.Join(dir, "slurmctld.pid"))
	p("SlurmdPidFile=%s", filepath.Join(dir, "slurmd-%n.pid"))
	p("SlurmctldLogFile=%s", filepath.Join(dir, "slurmctld.log"))
	p("SlurmdLogFile=%s", filepath.Join(dir, "slurmd-%n.log"))
	// No cgroups: a container or a CI runner rarely gives them.
	p("ProctrackType=proctrack/linuxproc")
	p("TaskPlugin=task/none")
	p("SelectType=select/cons_tres")
	p("SelectTypeParameters=CR_CPU")
	p("SchedulerType=sched/builtin")
	p("AccountingStorageType=accounting_storage/none")
	p("JobAcctGatherType=jobacct_gather/none")
	p("JobCompType=jobcomp/none")
	p("MpiDefault=none")
	p("MailProg=/bin/true")
	// A node whose slurmd comes back is usable again at once.
	p("ReturnToService=2")
	// The CPUs below, whatever this machine has.
	p("SlurmdParameters=config_overrides")
	// A killed task's step ends promptly.
	p("KillWait=5")
	p("InactiveLimit=0")
	names := make([]string, len(nodes))
	for i, port := range nodes {
		names[i] = NodeName(i)
		p("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d RealMemory=1 State=UNKNOWN", names[i], host, port, cpus)
	}
	p("PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP", strings.Join(names, ","))
	return b.String()
}

// NodeName is the name of the cluster's node i: n<i+1>.
func NodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

// Start starts a cluster for t and ends it when t ends. It skips t
// loudly (or fails it, see EnvRequire) when the programs are missing, or
// when the cluster does not start, with the reason and the daemons' last
// log lines.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "the test cluster's daemons run as root, and the tests do not")
		return nil
	}
	Need(t, Programs...)
	c, err := New(o)
	if err != nil {
		Unavailable(t, "the test cluster did not start: "+err.Error())
		return nil
	}
	t.Cleanup(func() {
		err := c.Close()
		for _, s := range c.Killed {
			// A daemon slow to stop on a loaded machine is not what the
			// test is about: it was killed, and the test says so.
			t.Logf("stopping the Slurm cluster: %s", s)
		}
		if err != nil {
			t.Errorf("stopping the Slurm cluster: %v", err)
		}
	})
	return c
}

// Unavailable skips t loudly because of why, or fails it when Required.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("Slurm: %s (%s=1: these tests must run)", why, EnvRequire)
	}
	t.Skip("SKIPPED: Slurm: " + why + " (scripts/slurm.sh installs it); ckpt's srun launcher is then tested against a fake srun only")
}

// Need is Unavailable unless the programs are on PATH.
func Need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			Unavailable(t, p+" is not on PATH")
			return
		}
	}
}

// New starts a cluster (Start without a test). Its error says which
// daemon failed, with the end of its log.
func New(o Options) (*Cluster, error) {
	if o.Nodes < 1 || o.CPUs < 1 {
		return nil, fmt.Errorf("slurmtest: %d nodes of %d CPUs: need at least 1 of 1", o.Nodes, o.CPUs)
	}
	dir, err := os.MkdirTemp("", "ckpt-slurm-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	if err := c.start(o); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(o Options) error {
	host, err := shortHostname()
	if err != nil {
		return err
	}
	ports, err := freePorts(1 + o.Nodes)
	if err != nil {
		return err
	}
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(c.Dir, d), 0o700); err != nil {
			return err
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(c.Dir, "munge.key"), key, 0o400); err != nil {
		return err
	}
	conf := Config(c.Dir, host, ports[0], ports[1:], o.CPUs)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return err
	}
	for i := range o.Nodes {
		c.Names = append(c.Names, NodeName(i))
		if err := os.MkdirAll(filepath.Join(c.Dir, "tmp", NodeName(i)), 0o700); err != nil {
			return err
		}
	}
	sock := filepath.Join(c.Dir, "munge.sock")
	// --force: munged would refuse a socket directory that is not
	// world-readable (the temporary directory is the test's own).
	if err := c.daemon("munged.out", "munged", "--foreground", "--force", "--key-file="+filepath.Join(c.Dir, "munge.key"),
		"--socket="+sock, "--pid-file="+filepath.Join(c.Dir, "munged.pid"),
		"--seed-file="+filepath.Join(c.Dir, "munged.seed"), "--log-file="+filepath.Join(c.Dir, "munged.log")); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := until(ctx, func() error {
		_, err := os.Stat(sock)
		return err
	}); err != nil {
		return fmt.Errorf("munged made no socket: %v%s", err, c.tail("munged.log", "munged.out"))
	}
	if err := c.daemon("slurmctld.out", "slurmctld", "-D", "-i", "-f", c.Conf); err != nil {
		return err
	}
	for _, n := range c.Names {
		if err := c.daemon("slurmd-"+n+".out", "slurmd", "-D", "-N", n, "-f", c.Conf); err != nil {
			return err
		}
	}
	// Ready when every node is idle, as sinfo sees it.
	err = until(ctx, func() error {
		out, err := c.Command(ctx, "sinfo", "-h", "-N", "-o", "%N %t").CombinedOutput()
		if err != nil {
			return fmt.Errorf("sinfo: %v: %s", err, bytes.TrimSpace(out))
		}
		idle := 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[1] == "idle" {
				idle++
			}
		}
		if idle != len(c.Names) {
			return fmt.Errorf("%d of %d nodes idle: %s", idle, len(c.Names), bytes.TrimSpace(out))
		}
		return nil
	})
	if err != nil {
		logs := []string{"slurmctld.log", "slurmctld.out"}
		for _, n := range c.Names {
			logs = append(logs, "slurmd-"+n+".log", "slurmd-"+n+".out")
		}
		return fmt.Errorf("the nodes did not become idle in %s: %v%s", StartTimeout, err, c.tail(logs...))
	}
	return nil
}

// Command is a client program (srun, salloc, squeue, ...) of the
// cluster's.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	return cmd
}

// daemon starts a daemon in the foreground, its output to dir/out; it
// dies with the test binary (Pdeathsig) should Close not run.
func (c *Cluster) daemon(out, name string, args ...string) error {
	f, err := os.Create(filepath.Join(c.Dir, out))
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// Close ends the daemons (SIGTERM, then SIGKILL after a grace period)
// and removes the directory.
func (c *Cluster) Close() error {
	var errs []error
	// The slurmd first, the controller then, munged last.
	for i := len(c.procs) - 1; i >= 0; i-- {
		cmd := c.procs[i]
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.Killed = append(c.Killed, filepath.Base(cmd.Path)+" did not end on SIGTERM in 30s: killed")
			cmd.Process.Kill()
			<-done
		}
	}
	c.procs = nil
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Log is the text of one of the cluster's logs (slurmctld.log,
// slurmd-n1.log, ...), for a test's failure message.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name))
	return string(b)
}

// tail is the last lines of the named logs, each headed by its name.
func (c *Cluster) tail(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		lines := strings.Split(strings.TrimSpace(c.Log(n)), "\n")
		if len(lines) == 1 && lines[0] == "" {
			continue
		}
		fmt.Fprintf(&b, "\n--- %s:\n%s", n, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	return b.String()
}

// until calls f until it succeeds, every 200ms, or ctx ends (with f's
// last error).
func until(ctx context.Context, f func() error) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-t.C:
		}
	}
}

// shortHostname is this machine's name without its domain: what
// slurmctld compares SlurmctldHost with.
func shortHostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	h, _, _ = strings.Cut(h, ".")
	return h, nil
}

// freePorts are n TCP ports free on loopback now (the kernel's choice).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
