package main

import (
	"fmt"
	"io"

	"github.com/ckpt/ckpt/internal/bench"
	"github.com/ckpt/ckpt/internal/netns"
)

// benchHosts makes the hosts of bench coord --netns H: the coordinator's
// and H of clients (none for H = 0, or where namespaces cannot be made:
// a notice says why).
func benchHosts(progress io.Writer, h, clients int) (*netns.Net, func(), error) {
	switch {
	case h == 0:
		return nil, func() {}, nil
	case h < 0 || h >= netns.MaxHosts || h > clients:
		return nil, nil, usagef("--netns %d: want 1 to %d hosts, and no more than --clients", h, min(netns.MaxHosts-1, clients))
	}
	if why := netns.Unavailable(); why != "" {
		fmt.Fprintf(progress, "ckpt bench coord: --netns: no network namespaces here (%s): loopback only\n", why)
		return nil, func() {}, nil
	}
	names := []string{"coord"}
	for i := range h {
		names = append(names, fmt.Sprintf("host%d", i))
	}
	n, err := netns.New(names...)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(progress, "ckpt bench coord: %s\n", n)
	return n, func() { n.Close() }, nil
}

// spreadJSON is bench coord's keys for the run over hosts (none without).
func spreadJSON(r bench.CoordResult) object {
	if r.Spread == 0 {
		return nil
	}
	return object{
		{"netns_hosts", r.Spread},
		{"netns_raw_seconds", num(r.SpreadRaw)},
		{"netns_flat_seconds", num(r.SpreadFlat)},
		{"netns_tree_seconds", num(r.SpreadTree)},
		{"netns_raw_vs_loopback", num(r.SpreadRaw / r.Raw)},
		{"netns_flat_vs_loopback", num(r.SpreadFlat / r.Flat)},
		{"netns_tree_vs_loopback", num(r.SpreadTree / r.Tree)},
	}
}

// spreadTable prints the run over hosts beside the loopback one.
func spreadTable(w io.Writer, r bench.CoordResult, perNode int) error {
	if r.Spread == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nthe same over %d hosts (network namespaces on a bridge):\n", r.Spread)
	t := newTable(w)
	t.row("MODE", "SECONDS", "RATIO TO LOOPBACK")
	t.row("raw TCP barrier", fmt.Sprintf("%.3f", r.SpreadRaw), fmt.Sprintf("%.2f", r.SpreadRaw/r.Raw))
	t.row("flat", fmt.Sprintf("%.3f", r.SpreadFlat), fmt.Sprintf("%.2f", r.SpreadFlat/r.Flat))
	t.row(fmt.Sprintf("tree (%d per node)", perNode), fmt.Sprintf("%.3f", r.SpreadTree), fmt.Sprintf("%.2f", r.SpreadTree/r.Tree))
	return t.flush()
}
