package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/inspect"
)

// sharedOnlyNote explains a checkpoint only the shared tier holds: not a
// problem, the state a finished job leaves.
const sharedOnlyNote = "in the shared tier only; no node cache holds it (a job's caches are removed when it finishes)"

// nonNil makes an empty list print as [] in JSON.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// errNotRecoverable exits 1 after the report has been printed.
var errNotRecoverable = errors.New("not recoverable")

// verifyLong is the help text of 'ckpt verify'.
const verifyLong = `Reads every byte of a checkpoint (or of every checkpoint) — each rank's files
and parity in the cache of the node that wrote them, and the shared tier's
objects — and checks them against the manifest. For each checkpoint it says
whether a restart could recover it and how, in the order a restart tries:
from the caches as they are (cache), by rebuilding lost or corrupt members
from their redundancy sets (rebuild), or from the shared tier (shared).

A damaged manifest (unreadable, failing its checksum, or differing from the
other copies) is reported in NOTES ("damaged" in --json: tier, node,
object and problem) and judged as a restart would: a node whose cache
manifest is damaged offers the checkpoint to no restart, but its files are
checked against another node's manifest like any others (and the manifest
written back); a damaged shared manifest means no fetch from the shared
tier; a checkpoint none of whose manifests decodes is not recoverable.

Exit status: 0 when the named checkpoint (or, without NAME, at least one
checkpoint) is recoverable; 1 otherwise; 2 for bad input. Damage, of data
or of manifests, changes the status only through recoverability.`

// verifyFlags are the flags of 'ckpt verify'.
type verifyFlags struct{ tierReader }

func newVerifyCmd() *cobra.Command {
	c := command("verify [NAME] [--job NAME | --cache-root DIR | --cache NODE=DIR ...] [--shared DIR]",
		"Recompute every hash and say whether each checkpoint is recoverable, and how", verifyLong, "", cobra.MaximumNArgs(1))
	f := &verifyFlags{readsTiers(c)}
	c.RunE = f.run
	return c
}

// run verifies the checkpoints (the one named in args, or all) and prints
// the verdicts; it fails with errNotRecoverable when none is recoverable.
func (f *verifyFlags) run(c *cobra.Command, args []string) error {
	tiers, list, err := f.tiers.list(c.Context())
	if err != nil {
		return err
	}
	if len(args) == 1 {
		var keep []inspect.Listing
		for _, l := range list {
			if l.Name == args[0] {
				keep = append(keep, l)
			}
		}
		if len(keep) == 0 {
			return usagef("no checkpoint %q in the caches or on the shared tier ('ckpt ls' lists them)", args[0])
		}
		list = keep
	}
	var results []inspect.Verification
	anyOK := false
	for _, l := range list {
		v := inspect.VerifyCheckpoint(c.Context(), tiers, l)
		anyOK = anyOK || v.Recoverable
		results = append(results, v)
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		if err := writeVerifyJSON(w, list, results); err != nil {
			return err
		}
	} else {
		writeVerifyTable(w, list, results)
	}
	if !anyOK {
		return errNotRecoverable
	}
	return nil
}

// writeVerifyJSON writes the verdicts (results[i] is of list[i]) as JSON.
func writeVerifyJSON(w io.Writer, list []inspect.Listing, results []inspect.Verification) error {
	items := []object{}
	for i, v := range results {
		ranks := []object{}
		for _, r := range v.Ranks {
			ranks = append(ranks, object{{"rank", r.Rank}, {"node", r.Node}, {"ok", r.OK}, {"problem", r.Problem}})
		}
		items = append(items, object{{"name", v.Name}, {"id", v.ID}, {"recoverable", v.Recoverable},
			{"how", v.How}, {"reason", v.Reason}, {"shared", v.Shared}, {"ranks", ranks},
			{"cache_nodes", nonNil(list[i].InCache)}, {"damaged", damageJSON(v.Damaged)}})
	}
	return writeJSON(w, object{{"checkpoints", items}})
}

// writeVerifyTable writes the verdicts (results[i] is of list[i]) as a table.
func writeVerifyTable(w io.Writer, list []inspect.Listing, results []inspect.Verification) {
	if len(results) == 0 {
		fmt.Fprintln(w, "no checkpoints")
	}
	t := newTable(w)
	t.row("NAME", "ID", "RECOVERABLE", "HOW", "NOTES")
	for i, v := range results {
		if v.How == ckpt.SourceShared && len(list[i].InCache) == 0 && v.Shared == "ok" && len(v.Damaged) == 0 {
			// The normal state of a finished job's checkpoints:
			// its caches were removed, the shared tier keeps them.
			t.row(v.Name, fmt.Sprint(v.ID), "yes", string(v.How), sharedOnlyNote)
			continue
		}
		rec, note := "no", v.Reason
		if v.Recoverable {
			rec = "yes"
			if v.How != ckpt.SourceCache {
				note = v.Reason
			}
		}
		for _, r := range v.Ranks {
			if !r.OK {
				note = fmt.Sprintf("rank %d on %s: %s; ", r.Rank, r.Node, r.Problem) + note
			}
		}
		if v.Shared != "" && v.Shared != "ok" {
			note += "; shared tier: " + v.Shared
		}
		if d := damageNote(v.Damaged); d != "" {
			note = d + "; " + note
		}
		id := fmt.Sprint(v.ID)
		if list[i].Manifest == nil {
			id = "?"
		}
		t.row(v.Name, id, rec, string(v.How), strings.TrimSuffix(note, "; "))
	}
	t.flush()
}
