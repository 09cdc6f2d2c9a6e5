package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/inspect"
	"github.com/ckpt/ckpt/internal/units"
)

// inspectFlags are the flags of 'ckpt inspect'.
type inspectFlags struct{ tierReader }

func newInspectCmd() *cobra.Command {
	c := command("inspect NAME [--job NAME | --cache-root DIR | --cache NODE=DIR ...] [--shared DIR]",
		"Show a checkpoint's manifest: redundancy sets, every rank's files, sizes and hashes", "", "", cobra.ExactArgs(1))
	f := &inspectFlags{readsTiers(c)}
	c.RunE = f.run
	return c
}

// run prints the manifest of the checkpoint named args[0].
func (f *inspectFlags) run(c *cobra.Command, args []string) error {
	_, list, err := f.tiers.list(c.Context())
	if err != nil {
		return err
	}
	var l *inspect.Listing
	for i := range list {
		if list[i].Name == args[0] {
			l = &list[i]
			break
		}
	}
	if l == nil {
		return usagef("no checkpoint %q in the caches or on the shared tier ('ckpt ls' lists them)", args[0])
	}
	if l.Manifest == nil {
		return fmt.Errorf("checkpoint %q: no manifest of it decodes (%s)", l.Name, damageNote(l.Damaged))
	}
	if *f.asJSON {
		return writeInspectJSON(c.OutOrStdout(), l)
	}
	return writeInspectTable(c.OutOrStdout(), l)
}

// writeInspectJSON writes l's manifest and where it is as JSON.
func writeInspectJSON(w io.Writer, l *inspect.Listing) error {
	m := l.Manifest
	parts := []object{}
	for _, p := range m.Parts {
		files := []object{}
		for _, f := range p.Files {
			o := object{{"name", f.Name}, {"bytes", f.Size}, {"hash", f.Hash.String()}}
			if f.Codec != "" { // stored compressed: how, and the object's size
				o = append(o, kv{"codec", f.Codec}, kv{"filter", f.Filter}, kv{"stored_bytes", f.StoredSize})
			}
			files = append(files, o)
		}
		parity := []object{}
		for _, f := range p.Parity {
			parity = append(parity, object{{"bytes", f.Size}, {"hash", f.Hash.String()}})
		}
		parts = append(parts, object{{"rank", p.Rank}, {"node", p.Node}, {"set", p.Set}, {"member", p.Member}, {"files", files}, {"parity", parity}})
	}
	nodes := l.InCache
	if nodes == nil {
		nodes = []string{}
	}
	return writeJSON(w, object{{"name", m.Name}, {"id", m.ID}, {"created", m.Created.Format(time.RFC3339Nano)},
		{"ranks", m.Ranks}, {"redundancy", m.Scheme}, {"set_size", m.SetSize}, {"parity", m.M}, {"sets", m.Sets},
		{"bytes", l.Bytes}, {"cache_nodes", nodes}, {"shared", l.InShared}, {"damaged", damageJSON(l.Damaged)}, {"parts", parts}})
}

// writeInspectTable writes l's manifest and where it is as two tables: the
// checkpoint, then every rank's files and parity.
func writeInspectTable(w io.Writer, l *inspect.Listing) error {
	m := l.Manifest
	t := newTable(w)
	t.row("name", fmt.Sprintf("%s (id %d)", m.Name, m.ID))
	t.row("created", m.Created.Format(time.RFC3339))
	t.row("ranks", fmt.Sprint(m.Ranks))
	t.row("redundancy", fmt.Sprintf("%s: sets of %d, each rebuilds up to %d lost members", m.Scheme, m.SetSize, m.M))
	t.row("sets", fmt.Sprint(m.Sets))
	t.row("size", units.FormatSize(float64(l.Bytes)))
	t.row("where", where(*l))
	t.flush()
	fmt.Fprintln(w)
	t = newTable(w)
	t.row("RANK", "NODE", "SET", "FILE", "SIZE", "XXH3-128")
	for _, p := range m.Parts {
		for _, f := range p.Files {
			size := fmt.Sprint(f.Size)
			if f.Codec != "" {
				size += fmt.Sprintf(" (%d stored)", f.StoredSize)
			}
			t.row(fmt.Sprint(p.Rank), p.Node, fmt.Sprint(p.Set), f.Name, size, f.Hash.String())
		}
		for _, f := range p.Parity {
			t.row(fmt.Sprint(p.Rank), p.Node, fmt.Sprint(p.Set), "(parity)", fmt.Sprint(f.Size), f.Hash.String())
		}
	}
	return t.flush()
}
