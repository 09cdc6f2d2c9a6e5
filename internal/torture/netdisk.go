package torture

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The pure parts of the network and disk faults (cut-node,
// partition-node, disk-full, shared-full): reading the kernel's socket
// tables, the commands that cut or partition a node, the size of a
// simulated disk. The I/O is in sandbox_linux.go.

// portsOf is the local ports, sorted and each once, of socks: the ports
// a node's processes hold.
func portsOf(socks []socket) []uint16 {
	var out []uint16
	for _, s := range socks {
		if p := s.local.Port(); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// socket is a line of /proc/PID/net/tcp or tcp6.
type socket struct {
	local, remote netip.AddrPort
	state         uint8 // tcpListen, ...
	inode         uint64
}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = 0x0A

// parseTCP reads /proc/PID/net/tcp or tcp6: after the header, one socket
// a line, "sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...",
// the addresses in hex as the kernel holds them.
func parseTCP(text string) ([]socket, error) {
	var out []socket
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue // the header, or the end
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("tcp table line %d: %d fields: %q", i+1, len(f), line)
		}
		local, err := parseHexAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("tcp table line %d: %w", i+1, err)
		}
		remote, err := parseHexAddr(f[2])
		if err != nil {
			return nil, fmt.Errorf("tcp table line %d: %w", i+1, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("tcp table line %d: state %q", i+1, f[3])
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tcp table line %d: inode %q", i+1, f[9])
		}
		out = append(out, socket{local: local, remote: remote, state: uint8(st), inode: inode})
	}
	return out, nil
}

// parseHexAddr reads "0100007F:1F90": the address as the kernel's 32-bit
// words in host order (little-endian here), the port big-endian. An
// IPv4-mapped IPv6 address is returned as IPv4, so that it compares equal
// to the address a process was given.
func parseHexAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port of %q", s)
	}
	ip := make([]byte, len(raw))
	for w := 0; w < len(raw); w += 4 {
		binary.BigEndian.PutUint32(ip[w:], binary.LittleEndian.Uint32(raw[w:]))
	}
	addr, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
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
