package main

import (
	"context"
	"strings"
	"time"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/jobdir"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/storage"
)

// preflight checks, before anything is launched, what every rank would
// otherwise find out for itself, N times over and after a relaunch or
// ten: a redundancy scheme the job's nodes cannot hold, a shared tier
// that cannot be used. Each problem is a usage error naming the flag and
// its value.
func (s runSpec) preflight(ctx context.Context) error {
	if err := checkRedundancyFits(s.redundancy, s.ranks, s.nodes); err != nil {
		return err
	}
	if s.shared != "" {
		if strings.HasPrefix(s.shared, "s3://") {
			return checkS3(ctx, s.shared)
		}
		if err := jobdir.CheckWritable(s.shared); err != nil {
			return usagef("--shared %s: %v", s.shared, err)
		}
	}
	if s.cacheRoot != "" {
		if err := jobdir.CheckWritable(s.cacheRoot); err != nil {
			return usagef("--cache-root %s: %v", s.cacheRoot, err)
		}
	}
	return nil
}

// checkRedundancyFits checks that the nodes 'ckpt run' spreads the ranks
// over can hold the scheme (launch.Job.CheckRedundancy): a usage error.
func checkRedundancyFits(scheme string, ranks, nodes int) error {
	if err := (launch.Job{Redundancy: scheme, Ranks: ranks, Nodes: nodes}).CheckRedundancy(); err != nil {
		return usageError{err}
	}
	return nil
}

// checkS3 checks that an object store location has credentials, and that
// the store does not refuse them or lack the bucket. A store out of reach
// is left to the ranks: it may come back.
func checkS3(ctx context.Context, loc string) error {
	cfg, err := s3.ParseURL(loc)
	if err != nil {
		return usagef("--shared %s: %v", loc, err)
	}
	switch {
	case cfg.AccessKey == "":
		return usagef("--shared %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or MINIO_ROOT_USER and MINIO_ROOT_PASSWORD)", loc)
	case cfg.SecretKey == "":
		return usagef("--shared %s: access key %s has no secret key: set AWS_SECRET_ACCESS_KEY", loc, cfg.AccessKey)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := ckpt.OpenShared(ctx, loc)
	if err != nil {
		if storage.IsPermanent(err) {
			return usagef("--shared %s: %v", loc, err)
		}
		return nil
	}
	b.Close()
	return nil
}
