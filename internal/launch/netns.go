package launch

import (
	"context"
	"net"
	"os/exec"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Hosts put the nodes of a job on hosts of their own, each with its own
// address (package netns: a network namespace per host, on a bridge),
// instead of one machine's loopback: a node's ranks run on its host, and
// bind and advertise its address; the coordinator listens on a host too.
// It is how the tests show that nothing depends on one shared address.
type Hosts interface {
	// Addr is the address of host (a node's name, or the coordinator's
	// host's), "" if there is none.
	Addr(host string) string
	// Command makes cmd run on host; it is called before Start.
	Command(host string, cmd *exec.Cmd) *exec.Cmd
	// Listen listens on host; Dial connects from host to addr (TCP).
	Listen(host, network, addr string) (net.Listener, error)
	Dial(ctx context.Context, host, addr string) (net.Conn, error)
}

// OnHosts runs the job of cfg and coords on hosts: every attempt's ranks
// by Local on their node's host, the coordinator (and in tree mode the
// sub-coordinators) on coordHost's address.
func OnHosts(cfg *Config, coords *Coordinators, hosts Hosts, coordHost string) {
	cfg.Launcher = Local{Hosts: hosts}
	coords.Listen = net.JoinHostPort(hosts.Addr(coordHost), "0")
	coords.Listener = func(addr string) (net.Listener, error) { return hosts.Listen(coordHost, "tcp", addr) }
	coords.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return hosts.Dial(ctx, coordHost, addr) }
}

// onHost makes rank's cmd run on its node's host, advertising the
// host's address to its peers (no change without hosts).
func onHost(hosts Hosts, node string, env *jobenv.Env, cmd *exec.Cmd) *exec.Cmd {
	if hosts == nil {
		return cmd
	}
	env.Advertise = hosts.Addr(node)
	return hosts.Command(node, cmd)
}

// listen listens on addr where the coordinators are told to (Listener),
// else on this machine.
func (f *Coordinators) listen(addr string) (net.Listener, error) {
	if f.Listener == nil {
		return net.Listen("tcp", addr)
	}
	return f.Listener(addr)
}

// relayAddr is where the sub-coordinators listen: on this machine's
// loopback, or on the coordinator's host beside it.
func (f *Coordinators) relayAddr(listen string) string {
	if f.Listener == nil {
		return "127.0.0.1:0"
	}
	host, _, _ := net.SplitHostPort(listen)
	return net.JoinHostPort(host, "0")
}
