//go:build linux

package tcplock

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// NFT is the Locker of the calling process's network namespace: an
// nftables table named Table (one per rank: the ranks of a node share
// its namespace) with an input and an output chain that drop the
// connections' packets. It needs CAP_NET_ADMIN.
type NFT struct {
	Table string
}

var _ Locker = NFT{}

func (n NFT) table() *nftables.Table {
	return &nftables.Table{Family: nftables.TableFamilyIPv4, Name: n.Table}
}

// Lock implements Locker: the table, replaced whole in one transaction
// if a previous lock left one.
func (n NFT) Lock(conns []Conn) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("tcplock: nftables: %w", err)
	}
	if err := n.drop(c); err != nil {
		return err
	}
	t := c.AddTable(n.table())
	for _, hook := range []struct {
		name string
		num  *nftables.ChainHook
		in   bool
	}{{"in", nftables.ChainHookInput, true}, {"out", nftables.ChainHookOutput, false}} {
		ch := c.AddChain(&nftables.Chain{Name: hook.name, Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: hook.num, Priority: nftables.ChainPriorityFilter})
		for _, conn := range conns {
			if !conn.Local.Addr().Is4() || !conn.Remote.Addr().Is4() {
				return fmt.Errorf("tcplock: %s: IPv4 only", conn)
			}
			src, dst := conn.Local, conn.Remote
			if hook.in {
				src, dst = dst, src
			}
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: match(src.Addr().As4(), dst.Addr().As4(), src.Port(), dst.Port())})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("tcplock: locking %d connections in table %s: %w", len(conns), n.Table, err)
	}
	return nil
}

// match is "tcp from src:sport to dst:dport: drop".
func match(src, dst [4]byte, sport, dport uint16) []expr.Any {
	eq := func(b []byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: b} }
	field := func(base expr.PayloadBase, off, n uint32) *expr.Payload {
		return &expr.Payload{DestRegister: 1, Base: base, Offset: off, Len: n}
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		eq([]byte{unix.IPPROTO_TCP}),
		field(expr.PayloadBaseNetworkHeader, 12, 4), eq(src[:]), // IPv4 source
		field(expr.PayloadBaseNetworkHeader, 16, 4), eq(dst[:]), // IPv4 destination
		field(expr.PayloadBaseTransportHeader, 0, 2), eq(binaryutil.BigEndian.PutUint16(sport)),
		field(expr.PayloadBaseTransportHeader, 2, 2), eq(binaryutil.BigEndian.PutUint16(dport)),
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// drop queues the removal of the table if it exists.
func (n NFT) drop(c *nftables.Conn) error {
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("tcplock: nftables: %w", err)
	}
	for _, t := range ts {
		if t.Name == n.Table {
			c.DelTable(t)
		}
	}
	return nil
}

// Unlock implements Locker.
func (n NFT) Unlock() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("tcplock: nftables: %w", err)
	}
	if err := n.drop(c); err != nil {
		return err
	}
	if err := c.Flush(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("tcplock: unlocking table %s: %w", n.Table, err)
	}
	return nil
}
