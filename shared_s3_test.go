package ckpt

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/internal/storage/s3/s3test"
)

// The shared tier as an S3 bucket (a MinIO server on loopback): flush, lose
// every cache, restart from the bucket.
func TestRestartFromS3(t *testing.T) {
	srv, err := s3test.StartIfFound()
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		t.Skip(s3test.SkipMessage)
	}
	defer srv.Close()
	ctx := context.Background()
	cfg, err := srv.NewBucket(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	j := newTestJob(t, 4, 2, "partner")
	setShared := func() {
		for _, s := range j.stores {
			s.eng.Shared = bucket
		}
	}
	setShared()
	j.mustRun(func(r int, s *Store) error {
		if err := writeCheckpoint(ctx, s, "c1"); err != nil {
			return err
		}
		return s.Flush(ctx, "c1")
	})
	j.loseNode(0)
	j.loseNode(1)
	j.relaunch()
	setShared()
	j.mustRun(func(r int, s *Store) error {
		res, err := s.Restart(ctx)
		if err != nil {
			return err
		}
		if res.Source != SourceShared {
			return fmt.Errorf("source %s, want shared", res.Source)
		}
		return checkRestored(ctx, s, res, "c1")
	})
}
