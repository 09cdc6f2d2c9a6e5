package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/storage"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// tierFlags are the flags of the commands that look at checkpoints from
// outside a job: where the node caches and the shared tier are.
type tierFlags struct {
	root   string
	caches []string
	shared string
}

func addTierFlags(fs *pflag.FlagSet) *tierFlags {
	t := &tierFlags{}
	fs.StringVar(&t.root, "cache-root", ckpt.DefaultCacheRoot(), "directory holding one cache directory per node, named after the node")
	fs.StringArrayVar(&t.caches, "cache", nil, "a node's cache as NODE=DIR (repeatable; replaces --cache-root)")
	fs.StringVar(&t.shared, "shared", "", "the shared tier: a directory, or s3://BUCKET/PREFIX (endpoint and credentials from CKPT_S3_ENDPOINT, AWS_*)")
	return t
}

func (t *tierFlags) open() (ckpt.Tiers, error) {
	var tiers ckpt.Tiers
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
	} else {
		caches, err := ckpt.OpenCacheRoot(t.root)
		switch {
		case os.IsNotExist(err):
			tiers.Caches = map[string]storage.Backend{}
		case err != nil:
			return tiers, usagef("--cache-root %s: %v", t.root, err)
		default:
			tiers.Caches = caches
		}
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

// list opens the tiers and lists their checkpoints, newest first.
func (t *tierFlags) list(ctx context.Context) (ckpt.Tiers, []ckpt.Listing, error) {
	tiers, err := t.open()
	if err != nil {
		return tiers, nil, err
	}
	list, err := ckpt.ListCheckpoints(ctx, tiers)
	return tiers, list, err
}

// where says which tiers hold a checkpoint.
func where(l ckpt.Listing) string {
	var parts []string
	if n := len(l.InCache); n > 0 {
		parts = append(parts, fmt.Sprintf("cache (%d nodes)", n))
	}
	if l.InShared {
		parts = append(parts, "shared")
	}
	return strings.Join(parts, ", ")
}
