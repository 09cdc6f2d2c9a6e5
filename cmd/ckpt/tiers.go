package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/inspect"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/storage/local"
	"github.com/ckpt/ckpt/storage"
)

// tierReader is the flags of a command that reads a job's tiers and
// prints a table or, with --json, one JSON object.
type tierReader struct {
	tiers  *tierFlags
	asJSON *bool
}

// readsTiers adds the tier flags and --json to c.
func readsTiers(c *cobra.Command) tierReader {
	return tierReader{tiers: addTierFlags(c.Flags()), asJSON: jsonFlag(c)}
}

// tierFlags are the flags of the commands that look at checkpoints from
// outside a job: where the node caches and the shared tier are.
type tierFlags struct {
	root   string
	job    string
	caches []string
	shared string
}

func addTierFlags(fs *pflag.FlagSet) *tierFlags {
	t := &tierFlags{}
	fs.StringVar(&t.root, "cache-root", "", "directory holding one cache directory per node, named after the node: a job's directory (default: the job --job names)")
	fs.StringVar(&t.job, "job", "", "the job whose caches to read, by its name under the default root (default: the one job there; 'ckpt ls' lists them)")
	fs.StringArrayVar(&t.caches, "cache", nil, "a node's cache as NODE=DIR (repeatable; replaces --cache-root)")
	fs.StringVar(&t.shared, "shared", "", "the shared tier: a directory, or s3://BUCKET/PREFIX (endpoint and credentials from CKPT_S3_ENDPOINT, AWS_*)")
	return t
}

func (t *tierFlags) open() (inspect.Tiers, error) {
	var tiers inspect.Tiers
	if len(t.caches) > 0 {
		tiers.Caches = map[string]storage.Backend{}
		for _, c := range t.caches {
			node, dir, ok := strings.Cut(c, "=")
			if !ok || node == "" || dir == "" {
				return tiers, usagef("--cache %q: want NODE=DIR", c)
			}
			b, err := local.New(dir)
			if err != nil {
				return tiers, usagef("--cache %q: %v", c, err)
			}
			tiers.Caches[node] = b
		}
	} else if root, err := t.cacheRoot(); err != nil {
		return tiers, err
	} else if root == "" {
		tiers.Caches = map[string]storage.Backend{} // the shared tier alone
	} else {
		caches, err := inspect.OpenCacheRoot(root)
		if err != nil {
			// Missing or misspelled: an error, never an empty list.
			flag := "--cache-root"
			if t.root == "" {
				flag = "--job " + t.job
			}
			return tiers, usagef("%s: %v", flag, err)
		}
		tiers.Caches = caches
	}
	if t.shared != "" {
		if !strings.HasPrefix(t.shared, "s3://") {
			// Looking must not create: a mistyped directory is an error.
			if _, err := os.Stat(t.shared); err != nil {
				return tiers, usagef("--shared %s: %v", t.shared, err)
			}
		}
		b, err := ckpt.OpenShared(context.Background(), t.shared)
		if err != nil {
			return tiers, usagef("--shared %s: %v", t.shared, err)
		}
		tiers.Shared = b
	}
	return tiers, nil
}

// named says whether the command line names the caches to read.
func (t *tierFlags) named() bool { return t.root != "" || t.job != "" || len(t.caches) > 0 }

// cacheRoot is the directory of the node caches to read: --cache-root,
// the job --job names, or the one job under the default root; "" for the
// shared tier alone (--shared and no job named).
func (t *tierFlags) cacheRoot() (string, error) {
	switch {
	case t.root != "" && t.job != "":
		return "", usagef("--job %s and --cache-root %s: give one", t.job, t.root)
	case t.root != "":
		return t.root, nil
	case t.job != "":
		d, err := jobdir.Named(jobdir.DefaultRoot(), t.job)
		if err != nil {
			return "", usagef("--job: %v", err)
		}
		if !d.Exists() {
			return "", usagef("--job %s: no such job in %s ('ckpt ls' lists the jobs)", t.job, jobdir.DefaultRoot())
		}
		return d.Path, nil
	case t.shared != "":
		return "", nil
	}
	root := jobdir.DefaultRoot()
	jobs, err := jobdir.List(root)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	switch len(jobs) {
	case 0:
		return "", usagef("no jobs in %s: name the caches with --job NAME, --cache-root DIR or --cache NODE=DIR", root)
	case 1:
		return jobs[0].Path, nil
	}
	names := make([]string, len(jobs))
	for i, d := range jobs {
		names[i] = d.Name
	}
	return "", usagef("name the job with --job: %s holds %s", root, strings.Join(names, ", "))
}

// list opens the tiers and lists their checkpoints, newest first.
func (t *tierFlags) list(ctx context.Context) (inspect.Tiers, []inspect.Listing, error) {
	tiers, err := t.open()
	if err != nil {
		return tiers, nil, err
	}
	list, err := inspect.ListCheckpoints(ctx, tiers)
	return tiers, list, err
}

// where says which tiers hold a checkpoint.
func where(l inspect.Listing) string {
	var parts []string
	if n := len(l.InCache); n > 0 {
		parts = append(parts, fmt.Sprintf("cache (%d nodes)", n))
	}
	if l.InShared {
		parts = append(parts, "shared")
	}
	if d := damageNote(l.Damaged); d != "" {
		parts = append(parts, d)
	}
	return strings.Join(parts, ", ")
}

// damageNote says which of a checkpoint's manifests are damaged and how;
// "" for none.
func damageNote(ds []inspect.Damage) string {
	var notes []string
	for _, d := range ds {
		notes = append(notes, d.String())
	}
	if len(notes) == 0 {
		return ""
	}
	return "damaged: " + strings.Join(notes, "; ")
}

// damageJSON is the "damaged" key of ls, inspect and verify: every damaged
// manifest of a checkpoint ([] for none).
func damageJSON(ds []inspect.Damage) []object {
	out := []object{}
	for _, d := range ds {
		var node any
		if d.Node != "" {
			node = d.Node
		}
		out = append(out, object{{"tier", d.Tier}, {"node", node}, {"object", d.Object}, {"problem", d.Problem}})
	}
	return out
}
