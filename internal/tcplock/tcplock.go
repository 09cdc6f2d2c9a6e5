// Package tcplock keeps a job's TCP connections quiet while its ranks are
// checkpointed or restored one by one: CRIU saves an established
// connection (--tcp-established) as its two ends' sequence numbers and
// queues, each end with its own rank, so no packet may cross between the
// first end's dump and the last's (else the byte a peer acknowledged
// after its own dump is in neither image), and none may reach an end
// that is not restored yet (its kernel would answer with a reset, and
// the restored peer's connection would die).
//
// Each rank's supervisor locks the connections of its own tree, in both
// directions, in its node's network namespace: an nftables table of its
// own whose input and output chains drop the packets of exactly those
// connections (their addresses and ports), so that the job's own traffic
// (coordinator, peers) goes on. TCP retransmits what was dropped once
// the table is gone: nothing is lost, only delayed.
//
// Conns lists the connections of a process tree from /proc (the pure
// part, Parse, reads /proc/net/tcp's text); NFT locks them.
package tcplock

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Conn is one established TCP connection, as its local end sees it.
type Conn struct {
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
}

func (c Conn) String() string { return c.Local.String() + "-" + c.Remote.String() }

// Locker keeps connections quiet: Lock drops their packets until Unlock
// (a second Lock replaces the first's set). Unlock without a lock, or
// after a supervisor that died locked, removes what is there.
type Locker interface {
	Lock(conns []Conn) error
	Unlock() error
}

// established is /proc/net/tcp's state of an established connection
// (TCP_ESTABLISHED).
const established = "01"

// Parse reads /proc/net/tcp's text (IPv4; /proc/net/tcp6 with v6) and
// returns the established connections whose socket inode is in inodes,
// in the file's order.
func Parse(text string, v6 bool, inodes map[uint64]bool) ([]Conn, error) {
	var out []Conn
	sc := bufio.NewScanner(strings.NewReader(text))
	first := true
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if first {
			first = false
			if len(f) > 0 && f[0] == "sl" {
				continue // the header
			}
		}
		if len(f) == 0 {
			continue
		}
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
		if len(f) < 10 {
			return nil, fmt.Errorf("tcplock: a line of /proc/net/tcp with %d fields: %q", len(f), sc.Text())
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tcplock: inode %q: %w", f[9], err)
		}
		if f[3] != established || !inodes[ino] {
			continue
		}
		l, err := parseAddrPort(f[1], v6)
		if err != nil {
			return nil, err
		}
		r, err := parseAddrPort(f[2], v6)
		if err != nil {
			return nil, err
		}
		out = append(out, Conn{Local: l, Remote: r})
	}
	return out, sc.Err()
}

// parseAddrPort reads "0100007F:1F90": the address is the kernel's
// in-memory bytes (network order) printed as 32-bit words in the host's
// order, the port a number.
func parseAddrPort(s string, v6 bool) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	n := 8
	if v6 {
		n = 32
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || len(a) != n || err != nil {
		return netip.AddrPort{}, fmt.Errorf("tcplock: bad address %q in /proc/net/tcp", s)
	}
	var b [16]byte
	for i := 0; i < n/8; i++ {
		w, err := strconv.ParseUint(a[8*i:8*i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("tcplock: bad address %q in /proc/net/tcp", s)
		}
		binary.NativeEndian.PutUint32(b[4*i:], uint32(w))
	}
	var addr netip.Addr
	if v6 {
		addr = netip.AddrFrom16(b).Unmap()
	} else {
		addr = netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// Conns lists the established TCP connections that the processes pids
// (a frozen tree, all in one network namespace: pids[0]'s) have open.
// An IPv6 one is an error: NFT locks IPv4 only.
func Conns(pids []int) ([]Conn, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	inodes := map[uint64]bool{}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // ended: its sockets with it
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err != nil {
				continue
			}
			if rest, ok := strings.CutPrefix(link, "socket:["); ok {
				if ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
					inodes[ino] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	var all []Conn
	for _, v6 := range []bool{false, true} {
		name := "tcp"
		if v6 {
			name = "tcp6"
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pids[0], name))
		if err != nil {
			if v6 && os.IsNotExist(err) {
				continue // no IPv6 in this kernel
			}
			return nil, err
		}
		conns, err := Parse(string(b), v6, inodes)
		if err != nil {
			return nil, err
		}
		for _, c := range conns {
			if !c.Local.Addr().Is4() {
				return nil, fmt.Errorf("tcplock: the IPv6 connection %s: only IPv4 connections are checkpointed", c)
			}
		}
		all = append(all, conns...)
	}
	slices.SortFunc(all, func(a, b Conn) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(all), nil
}
