package torture

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The pure parts of the network and disk faults (cut-node,
// partition-node, disk-full, shared-full): reading the kernel's socket
// tables, the commands that cut or partition a node, the size of a
// simulated disk. The I/O is in sandbox_linux.go.

// socket is one line of /proc/net/tcp or /proc/net/tcp6.
type socket struct {
	Inode  uint64
	Port   uint16 // local port
	Listen bool
}

// tcpListen is the state of a listening socket in /proc/net/tcp ("st").
const tcpListen = "0A"

// parseTCP reads the text of /proc/PID/net/tcp or tcp6: a header line,
// then one socket a line, "sl local_address rem_address st ... uid
// timeout inode ...", the local address as hex IP:PORT. Lines it cannot
// read are left out (the table may change while it is read).
func parseTCP(text string) []socket {
	var out []socket
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 {
			continue
		}
		_, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil || inode == 0 {
			continue // a socket in TIME_WAIT belongs to no process
		}
		out = append(out, socket{Inode: inode, Port: uint16(p), Listen: f[3] == tcpListen})
	}
	return out
}

// socketInode is the inode of a file descriptor's link ("socket:[123]"),
// or 0 when it is not a socket.
func socketInode(link string) uint64 {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// portsOf is the local ports, sorted, of the sockets whose inode is in
// inodes: the ports a node's processes hold.
func portsOf(socks []socket, inodes map[uint64]bool) []uint16 {
	var out []uint16
	for _, s := range socks {
		if inodes[s.Inode] && !slices.Contains(out, s.Port) {
			out = append(out, s.Port)
		}
	}
	slices.Sort(out)
	return out
}

// cutArgs are the arguments of ss that destroy (SOCK_DESTROY) every TCP
// connection with an end on one of ports: both ends of each, since both
// are in the job's network namespace. Listening sockets stay: a node
// whose connections were cut can be reached again.
func cutArgs(ports []uint16) []string {
	args := []string{"-K", "-t", "-n", "state", "connected", "("}
	for i, p := range ports {
		if i > 0 {
			args = append(args, "or")
		}
		args = append(args, "sport", "=", fmt.Sprintf(":%d", p), "or", "dport", "=", fmt.Sprintf(":%d", p))
	}
	return append(args, ")")
}

// partitionSetup is the `tc -batch` input that prepares the loopback
// device of the job's network namespace for a partition: an HTB root
// whose unclassified packets go straight through (HTB's direct queue:
// no class is the default), and one class whose only queue holds no
// packet (pfifo limit 0): a packet a filter sends there is dropped. Only
// HTB, pfifo and u32 are needed, which kernels without netem or prio
// have too.
const partitionSetup = `qdisc add dev lo root handle 1: htb
class add dev lo parent 1: classid 1:1 htb rate 8bit quantum 1514
qdisc add dev lo parent 1:1 handle 10: pfifo limit 0
`

// partitionFilters is the `tc -batch` input that sends every packet from
// or to one of ports, IPv4 or IPv6, to the dropping class of
// partitionSetup. u32 filters of one priority share a protocol, hence
// two priorities.
func partitionFilters(ports []uint16) string {
	var b strings.Builder
	for _, p := range ports {
		for _, dir := range []string{"sport", "dport"} {
			fmt.Fprintf(&b, "filter add dev lo parent 1: protocol ip prio 1 u32 match ip %s %d 0xffff flowid 1:1\n", dir, p)
			fmt.Fprintf(&b, "filter add dev lo parent 1: protocol ipv6 prio 2 u32 match ip6 %s %d 0xffff flowid 1:1\n", dir, p)
		}
	}
	return b.String()
}

// diskPeak is the most bytes one node's cache and the shared tier held
// in a workload's failure-free run.
type diskPeak struct{ cache, shared int64 }

// tmpfsSize is the size of a simulated disk (a node's cache, the shared
// tier) for a workload whose failure-free run held at most peak bytes
// there: room for four times that (faults make a disk hold more: a
// checkpoint pinned while its staging server hangs, a rebuild beside the
// old copy) and 8 MiB more, in whole MiB. A disk-full fault fills what
// is left, whatever the size.
func tmpfsSize(peak int64) int64 {
	const mib = 1 << 20
	n := 4*max(peak, 0) + 8*mib
	return (n + mib - 1) / mib * mib
}
