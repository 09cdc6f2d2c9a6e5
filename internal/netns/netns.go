// Package netns puts simulated nodes on hosts of their own: one Linux
// network namespace per host, each with its own address on a private
// subnet (10.77.0.0/24), joined by a bridge in a namespace of the
// harness (the hub), so that nothing of one run touches the machine's own
// network or another run's. Programs run on a host through Command (`ip
// netns exec`); a process makes sockets on a host through Listen and Dial.
// A host's link is cut and restored (LinkDown, LinkUp) or degraded with
// tc netem (Netem).
//
// Everything a Net makes is named with a prefix of its own (ckpt, the
// pid, a random tag: "ckpt1234x9f2a-") and goes with Close; Sweep removes
// what a run that died left behind (its pid gone). Making namespaces
// needs root and iproute2's ip: Unavailable says why it cannot be done
// here, and the callers fall back to one shared loopback address, saying
// so.
package netns

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Subnet is the hosts' private subnet: host i of a Net has Subnet.(i+1).
const Subnet = "10.77.0"

// MaxHosts is the most hosts a Net holds: the subnet's addresses.
const MaxHosts = 253

// Dir is where ip keeps the named namespaces.
const Dir = "/run/netns"

// Net is the hosts of one run and the hub that joins them.
type Net struct {
	prefix string
	hosts  []*Host
	byName map[string]*Host

	mu     sync.Mutex
	closed bool
}

// Host is one simulated machine: a namespace with loopback and one link
// (eth0, Addr/24) to the bridge.
type Host struct {
	Name string // the caller's name for it (a node's name, "coord")
	NS   string // the namespace's name
	Addr string // its address on the subnet
	port string // its link's end in the hub, on the bridge
	net  *Net
}

var (
	probeOnce sync.Once
	probeWhy  string
)

// Unavailable says why this machine cannot make hosts ("" when it can).
func Unavailable() string {
	probeOnce.Do(func() { probeWhy = probe() })
	return probeWhy
}

// tagPattern matches the prefix of every Net's names; its group is the
// pid of the process that made it.
var tagPattern = regexp.MustCompile(`^ckpt(\d+)x[0-9a-f]{4}-`)

// New makes one host per name (names distinct, at most MaxHosts), in
// order: host i has address Subnet.(i+1). On an error, whatever was made
// is removed.
func New(names ...string) (*Net, error) {
	if why := Unavailable(); why != "" {
		return nil, errors.New("netns: " + why)
	}
	if len(names) == 0 || len(names) > MaxHosts {
		return nil, fmt.Errorf("netns: %d hosts: want 1 to %d", len(names), MaxHosts)
	}
	Sweep()
	tag := make([]byte, 2)
	rand.Read(tag)
	n := &Net{prefix: fmt.Sprintf("ckpt%dx%s-", os.Getpid(), hex.EncodeToString(tag)), byName: map[string]*Host{}}
	for i, name := range names {
		if _, dup := n.byName[name]; dup || name == "" {
			return nil, fmt.Errorf("netns: host name %q empty or given twice", name)
		}
		h := &Host{Name: name, NS: n.prefix + strconv.Itoa(i), Addr: fmt.Sprintf("%s.%d", Subnet, i+1),
			port: "p" + strconv.Itoa(i), net: n}
		n.hosts = append(n.hosts, h)
		n.byName[name] = h
	}
	if err := n.make(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// hub is the name of the namespace that holds the bridge.
func (n *Net) hub() string { return n.prefix + "hub" }

// make creates the namespaces, the bridge, the links and the addresses:
// three batches of ip commands and one per host.
func (n *Net) make() error {
	var add strings.Builder
	fmt.Fprintf(&add, "netns add %s\n", n.hub())
	for _, h := range n.hosts {
		fmt.Fprintf(&add, "netns add %s\n", h.NS)
	}
	if err := ipBatch("", add.String()); err != nil {
		return err
	}
	var hub strings.Builder
	hub.WriteString("link set lo up\nlink add name br0 type bridge\nlink set br0 up\n")
	for _, h := range n.hosts {
		fmt.Fprintf(&hub, "link add name %s type veth peer name eth0 netns %s\nlink set %s master br0\nlink set %s up\n",
			h.port, h.NS, h.port, h.port)
	}
	if err := ipBatch(n.hub(), hub.String()); err != nil {
		return err
	}
	for _, h := range n.hosts {
		if err := ipBatch(h.NS, fmt.Sprintf("link set lo up\naddr add %s/24 dev eth0\nlink set eth0 up\n", h.Addr)); err != nil {
			return err
		}
	}
	return nil
}

// Hosts are the hosts, in the order New was given their names.
func (n *Net) Hosts() []*Host { return n.hosts }

// Host is the host of that name, nil if none.
func (n *Net) Host(name string) *Host { return n.byName[name] }

// Addr is the address of the host of that name ("" if none): a launcher
// gives it to the node's ranks, which bind and advertise it.
func (n *Net) Addr(name string) string {
	if h := n.byName[name]; h != nil {
		return h.Addr
	}
	return ""
}

// Command makes cmd run on the host of that name (unchanged if none).
func (n *Net) Command(name string, cmd *exec.Cmd) *exec.Cmd {
	if h := n.byName[name]; h != nil {
		return h.Command(cmd)
	}
	return cmd
}

// Listen listens on the host of that name.
func (n *Net) Listen(name, network, addr string) (net.Listener, error) {
	h := n.byName[name]
	if h == nil {
		return nil, fmt.Errorf("netns: no host %q", name)
	}
	return h.Listen(network, addr)
}

// Dial connects from the host of that name to addr.
func (n *Net) Dial(ctx context.Context, name, addr string) (net.Conn, error) {
	h := n.byName[name]
	if h == nil {
		return nil, fmt.Errorf("netns: no host %q", name)
	}
	return h.DialContext(ctx, addr)
}

// Dialer is h's DialContext in the form the coordinator's clients take
// (coordnet.DialFunc).
func (h *Host) Dialer() func(ctx context.Context, addr string) (net.Conn, error) {
	return h.DialContext
}

// String names the run's namespaces, for a notice.
func (n *Net) String() string {
	return fmt.Sprintf("%d hosts in network namespaces %s0..%d on %s.0/24", len(n.hosts), n.prefix, len(n.hosts)-1, Subnet)
}

// Close ends the processes still on the hosts (the run's own: nothing
// else enters its namespaces) and removes the namespaces; the links and
// the bridge go with them. It may be called more than once.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	names := []string{n.hub()}
	for _, h := range n.hosts {
		names = append(names, h.NS)
	}
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join(Dir, ns)); err != nil {
			continue // never made
		}
		killIn(ns)
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killIn kills the processes left in namespace ns, by their pids.
func killIn(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Sweep removes the namespaces of runs whose process is gone (a test or
// a benchmark killed before its Close), and says which it removed.
func Sweep() []string {
	entries, err := os.ReadDir(Dir)
	if err != nil {
		return nil
	}
	var gone []string
	for _, e := range entries {
		m := tagPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || alive(pid) {
			continue
		}
		if ip("netns", "del", e.Name()) == nil {
			gone = append(gone, e.Name())
		}
	}
	return gone
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Command makes cmd run on h: `ip netns exec`, which then executes the
// program in place (the pid is the program's). Call it before Start.
func (h *Host) Command(cmd *exec.Cmd) *exec.Cmd {
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		cmd.Err = err
		return cmd
	}
	cmd.Args = append([]string{"ip", "netns", "exec", h.NS, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = ipPath
	return cmd
}

// Path is the file of h's namespace, for setns.
func (h *Host) Path() string { return filepath.Join(Dir, h.NS) }

// LinkDown cuts h's link at the bridge, as a pulled cable: h's packets
// are lost, its connections neither close nor get an answer.
func (h *Host) LinkDown() error { return ipBatch(h.net.hub(), "link set "+h.port+" down\n") }

// LinkUp restores h's link.
func (h *Host) LinkUp() error { return ipBatch(h.net.hub(), "link set "+h.port+" up\n") }

// Netem delays every packet h sends by delay and loses the fraction
// loss of them (tc netem on its link; an error where the kernel has no
// netem). Zero for both removes it.
func (h *Host) Netem(delay time.Duration, loss float64) error {
	if delay == 0 && loss == 0 {
		_, err := run(nil, "ip", "netns", "exec", h.NS, "tc", "qdisc", "del", "dev", "eth0", "root")
		return err
	}
	args := []string{"netns", "exec", h.NS, "tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
		"delay", fmt.Sprintf("%dus", delay.Microseconds())}
	if loss > 0 {
		args = append(args, "loss", fmt.Sprintf("%g%%", loss*100))
	}
	if _, err := run(nil, "ip", args...); err != nil {
		// Some kernels are built without the netem qdisc: say what is
		// missing rather than only tc's "qdisc kind is unknown".
		return fmt.Errorf("netns: %s: tc netem (delay %v, loss %g): %w", h.Name, delay, loss, err)
	}
	return nil
}

// ip runs one ip command.
func ip(args ...string) error {
	_, err := run(nil, "ip", args...)
	return err
}

// ipBatch runs ip's commands, one a line, in namespace ns ("": this
// process's).
func ipBatch(ns, cmds string) error {
	args := []string{"-batch", "-"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	_, err := run(strings.NewReader(cmds), "ip", args...)
	if err != nil && ns != "" {
		return fmt.Errorf("in %s: %w", ns, err)
	}
	return err
}

func run(stdin *strings.Reader, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("netns: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}
