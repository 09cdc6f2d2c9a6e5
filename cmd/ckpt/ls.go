package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
)

func newLsCmd() *cobra.Command {
	c := leaf("ls [--job NAME | --cache-root DIR | --cache NODE=DIR ...] [--shared DIR]", "List the jobs 'ckpt run' ran, or the checkpoints of a job's node caches and the shared tier", lsLong, "")
	tf := addTierFlags(c.Flags())
	asJSON := jsonFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if !tf.named() && tf.shared == "" {
			return listJobs(c, *asJSON)
		}
		_, list, err := tf.list(c.Context())
		if err != nil {
			return err
		}
		w := c.OutOrStdout()
		if *asJSON {
			items := []object{}
			for _, l := range list {
				nodes := l.InCache
				if nodes == nil {
					nodes = []string{}
				}
				items = append(items, object{{"name", l.Name}, {"id", l.ID}, {"ranks", l.Ranks}, {"redundancy", l.Scheme},
					{"bytes", l.Bytes}, {"cache_nodes", nodes}, {"shared", l.InShared}, {"damaged", damageJSON(l.Damaged)}})
			}
			return writeJSON(w, object{{"checkpoints", items}})
		}
		if len(list) == 0 {
			fmt.Fprintln(w, "no checkpoints")
			return nil
		}
		t := newTable(w)
		t.row("NAME", "ID", "RANKS", "REDUNDANCY", "SIZE", "WHERE")
		for _, l := range list {
			if l.Manifest == nil {
				// No manifest of it decodes: nothing is known but its name.
				t.row(l.Name, "?", "?", "?", "?", where(l))
				continue
			}
			t.row(l.Name, fmt.Sprint(l.ID), fmt.Sprint(l.Ranks), l.Scheme, units.FormatSize(float64(l.Bytes)), where(l))
		}
		return t.flush()
	}
	return c
}

const lsLong = `Lists every checkpoint with a manifest in a node's cache or on the shared
tier, newest first. It reads manifests only; 'ckpt verify' checks the data.
A manifest that cannot be read, fails its checksum or differs from the
other copies is listed as damaged in WHERE ("damaged" in --json: tier,
node, object and problem), never skipped; a checkpoint none of whose
manifests decodes is listed with "?" for what only a manifest tells (id 0
in --json), after the others.
On one machine a job's node caches live in its directory, one directory per
node: name the job with --job (or --cache-root for a job started with one).
Without a job named (and without --shared) it lists the jobs in the default
root, the one 'ckpt run' uses: their names, whether they run, their
checkpoints. A --cache-root or --job that does not exist is an error.`
