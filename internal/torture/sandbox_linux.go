package torture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/netns"
)

// A job's sandbox: a holder process that owns a network namespace (its
// own loopback device, up) and a mount namespace (every mount private)
// of its own. Every `ckpt run` of the job runs inside both (nsenter), so
// that the job's tc rules, destroyed sockets and small file systems
// touch no other job on the machine, and everything goes when the
// holder and the job's processes are gone, even when torture is killed:
// the holder dies with torture (Pdeathsig, and its stdin's end), the
// launchers likewise, their ranks with them. The namespaces belong to
// the job, not to one launch, so that a `ckpt run` started after a
// killed launcher finds its caches again.
//
// Inside it, every node's cache is a directory of a tmpfs of its own and
// the shared tier one too (disks): a disk-full fault fills one of them
// with a ballast file beside the cache, where ckpt never looks.
type sandbox struct {
	holder *exec.Cmd
	stdin  io.WriteCloser
	pid    int
	gone   chan struct{}
}

// sandboxTools are the commands a sandbox uses: util-linux's and
// iproute2's.
var sandboxTools = []string{"unshare", "nsenter", "mount", "ip", "tc", "ss"}

var (
	probeOnce sync.Once
	probeWhy  string
)

// SandboxUnavailable says why this machine cannot give a job a sandbox
// ("" when it can): the network and disk faults need one.
func SandboxUnavailable() string {
	probeOnce.Do(func() { probeWhy = probeSandbox() })
	return probeWhy
}

func probeSandbox() string {
	if os.Geteuid() != 0 {
		return "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN, for a network and a mount namespace per job)"
	}
	var missing []string
	for _, t := range sandboxTools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("needs %s on PATH (util-linux's unshare, nsenter, mount; iproute2's ip, tc, ss)", strings.Join(missing, ", "))
	}
	// The namespaces, and the queueing a partition needs, in a namespace
	// that goes at once.
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-c", "ip link set lo up && tc -batch -")
	cmd.Stdin = strings.NewReader(partitionSetup + partitionFilters([]uint16{1}))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("a network and mount namespace with an HTB qdisc, a pfifo and u32 filters on lo failed: %v: %s", err, bytes.TrimSpace(out))
	}
	return ""
}

// startSandbox starts a holder and waits until its namespaces exist.
func startSandbox(ctx context.Context, wait time.Duration) (*sandbox, error) {
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private", "--",
		"sh", "-c", "ip link set lo up && echo ready && exec cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &sandbox{holder: cmd, stdin: stdin, pid: cmd.Process.Pid, gone: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line == "ready\n"
		io.Copy(io.Discard, stdout)
	}()
	go func() { cmd.Wait(); close(s.gone) }()
	var ok bool
	select {
	case ok = <-ready:
	case <-time.After(wait):
	case <-ctx.Done():
	}
	if !ok {
		s.Close()
		return nil, fmt.Errorf("torture: the sandbox did not start: %s", bytes.TrimSpace(stderr.Bytes()))
	}
	// Never a mount or a qdisc in torture's own namespaces.
	for _, ns := range []string{"net", "mnt"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", s.pid, ns))
		if err1 != nil || err2 != nil || mine == its {
			s.Close()
			return nil, fmt.Errorf("torture: the sandbox's %s namespace is not its own (%v, %v)", ns, err1, err2)
		}
	}
	return s, nil
}

// command is name run in the sandbox's network and mount namespaces.
func (s *sandbox) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(s.pid), "-n", "-m", "--", name}, args...)...)
}

// run runs name in the sandbox with stdin, and returns its output.
func (s *sandbox) run(stdin string, name string, args ...string) (string, error) {
	cmd := s.command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// path is where torture, outside, finds the file the job sees at p.
func (s *sandbox) path(p string) string {
	return fmt.Sprintf("/proc/%d/root%s", s.pid, p)
}

// disk mounts a tmpfs of size bytes at disk, makes its directory sub,
// and binds that at at ("" : none). The ballast of a disk-full fault
// goes beside sub, where ckpt does not look.
func (s *sandbox) disk(disk string, size int64, sub, at string) error {
	if err := os.MkdirAll(disk, 0o755); err != nil {
		return err
	}
	if _, err := s.run("", "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=755", size), "ckpt-torture", disk); err != nil {
		return err
	}
	if err := os.Mkdir(s.path(filepath.Join(disk, sub)), 0o755); err != nil {
		return err
	}
	if at == "" {
		return nil
	}
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	_, err := s.run("", "mount", "--bind", filepath.Join(disk, sub), at)
	return err
}

// Close ends the holder; the namespaces go with the job's last process.
func (s *sandbox) Close() error {
	s.stdin.Close()
	s.holder.Process.Kill()
	<-s.gone
	return nil
}

// ballast is the file a disk-full fault fills disk with.
func ballast(disk string) string { return filepath.Join(disk, "ballast") }

// fill appends zeros to file until its file system is full.
func fill(file string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// lasting is a network or disk fault held until Heal: refresh runs every
// 200 ms meanwhile (a node's new connections are partitioned too; space
// the job freed is filled again), heal at the end.
type lasting struct {
	stop, done chan struct{}
	heal       func() error
}

func (j *procJob) hold(refresh func() error, heal func() error) {
	l := &lasting{stop: make(chan struct{}), done: make(chan struct{}), heal: heal}
	j.lasting = l
	go func() {
		defer close(l.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				if err := refresh(); err != nil {
					fmt.Fprintf(j.logFile(), "torture: refreshing a lasting fault: %v\n", err)
				}
			}
		}
	}()
}

// unhold heals the lasting fault, if any.
func (j *procJob) unhold() error {
	l := j.lasting
	if l == nil {
		return nil
	}
	j.lasting = nil
	close(l.stop)
	<-l.done
	return l.heal()
}

// logFile is the job's log, for what torture has to say about it (a
// writer that drops everything if it cannot be opened).
func (j *procJob) logFile() io.Writer {
	f, err := os.OpenFile(j.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return io.Discard
	}
	return appendCloser{f}
}

type appendCloser struct{ f *os.File }

func (a appendCloser) Write(b []byte) (int, error) {
	defer a.f.Close()
	return a.f.Write(b)
}

// nodePorts is the local ports of every TCP socket of node's ranks (the
// ranks are in the job's network namespace: their tables are the job's).
func (j *procJob) nodePorts(node int) ([]uint16, error) {
	var socks []socket
	for _, p := range j.children() {
		if p.rank < 0 || p.node != node {
			continue
		}
		s, err := sockets(p.pid)
		if err != nil {
			continue // the rank ended meanwhile
		}
		socks = append(socks, s...)
	}
	ports := portsOf(socks)
	if len(ports) == 0 {
		return nil, fmt.Errorf("%w: node %d's ranks hold no TCP socket", ErrNothingToHit, node)
	}
	return ports, nil
}

// injectNetDisk performs a network or disk fault in the job's sandbox.
func (j *procJob) injectNetDisk(f Fault) (time.Time, error) {
	if j.sb == nil {
		return time.Time{}, fmt.Errorf("torture: %s needs the job to run in a sandbox", f.Kind)
	}
	node := f.Target % max(j.w.Nodes, 1)
	switch f.Kind {
	case CutNode:
		ports, err := j.nodePorts(node)
		if err != nil {
			return time.Time{}, err
		}
		_, err = j.sb.run("", "ss", cutArgs(ports)...)
		return time.Now(), err
	case PartitionNode:
		ports, err := j.nodePorts(node)
		if err != nil {
			return time.Time{}, err
		}
		if _, err := j.sb.run(partitionSetup+partitionFilters(ports), "tc", "-batch", "-"); err != nil {
			j.sb.run("", "tc", "qdisc", "del", "dev", "lo", "root")
			return time.Time{}, err
		}
		at := time.Now()
		j.hold(func() error {
			now, err := j.nodePorts(node)
			if err != nil {
				return nil // the node's ranks are gone or between launches
			}
			var fresh []uint16
			for _, p := range now {
				if !slices.Contains(ports, p) {
					fresh = append(fresh, p)
				}
			}
			if len(fresh) == 0 {
				return nil
			}
			ports = append(ports, fresh...)
			_, err = j.sb.run(partitionFilters(fresh), "tc", "-batch", "-")
			return err
		}, func() error {
			_, err := j.sb.run("", "tc", "qdisc", "del", "dev", "lo", "root")
			return err
		})
		return at, nil
	case DiskFull, SharedFull:
		disk := j.cacheDisk(node)
		if f.Kind == SharedFull {
			disk = j.sharedDisk()
		}
		file := j.sb.path(ballast(disk))
		if err := fill(file); err != nil {
			os.Remove(file)
			return time.Time{}, err
		}
		j.hold(func() error { return fill(file) }, func() error { return os.Remove(file) })
		return time.Now(), nil
	}
	return time.Time{}, fmt.Errorf("unknown fault kind %q", f.Kind)
}

// cacheDisk is the tmpfs of node's cache in a sandboxed job; sharedDisk
// the shared tier's.
func (j *procJob) cacheDisk(node int) string {
	return filepath.Join(j.dir, "disks", fmt.Sprintf("node%d", node))
}

func (j *procJob) sharedDisk() string { return filepath.Join(j.dir, "disks", "shared") }

// sandbox starts the job's sandbox and its disks: each node's cache and
// the shared tier on a tmpfs of its own, sized for the workload (peak:
// the most one of them held in the failure-free run).
func (j *procJob) sandbox(ctx context.Context, peak diskPeak) error {
	sb, err := startSandbox(ctx, j.p.wait())
	if err != nil {
		return err
	}
	j.sb = sb
	fmt.Fprintf(j.logFile(), "torture: sandbox %d: each node's cache on a tmpfs of %d MiB, the shared tier on one of %d MiB\n",
		sb.pid, tmpfsSize(peak.cache)>>20, tmpfsSize(peak.shared)>>20)
	for n := range j.w.Nodes {
		if err := sb.disk(j.cacheDisk(n), tmpfsSize(peak.cache), "cache", filepath.Join(j.cache, fmt.Sprintf("node%d", n))); err != nil {
			return err
		}
	}
	j.shared = filepath.Join(j.sharedDisk(), "shared")
	return sb.disk(j.sharedDisk(), tmpfsSize(peak.shared), "shared", "")
}

// host is where torture finds the job's file p: inside the sandbox's
// mount namespace when the job has one.
func (j *procJob) host(p string) string {
	if j.sb == nil {
		return p
	}
	return j.sb.path(p)
}

// measure raises pk to what the job's disks hold now.
func (j *procJob) measure(pk *diskPeak) {
	nodes, _ := filepath.Glob(filepath.Join(j.cache, "node*"))
	for _, n := range nodes {
		pk.cache = max(pk.cache, diskUsage(n))
	}
	pk.shared = max(pk.shared, diskUsage(j.shared))
}

// diskUsage is the bytes of the blocks under dir.
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// dial connects to addr from inside the sandbox's network namespace (the
// hostile fault's attacks on a sandboxed job).
func (s *sandbox) dial(ctx context.Context, addr string) (nc net.Conn, err error) {
	err = s.inNet(func() error {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return nc, err
}

// inNet runs fn inside the sandbox's network namespace: the sockets it
// makes belong there (netns.Do says how).
func (s *sandbox) inNet(fn func() error) error {
	return netns.Do(fmt.Sprintf("/proc/%d/ns/net", s.pid), fn)
}
