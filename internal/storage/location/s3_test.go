package location_test

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ckpt/ckpt/internal/storage/location"
	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/internal/storage/s3/s3test"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

// The MinIO server of this test binary, started by the first test that
// needs it and killed by TestMain.
var (
	srvOnce sync.Once
	srv     *s3test.Server
	srvErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// bucket returns the s3:// location of a new bucket of the test server,
// with the environment set for s3.ParseURL to reach it.
func bucket(t *testing.T, prefix string) (loc string, cfg s3.Config) {
	t.Helper()
	srvOnce.Do(func() { srv, srvErr = s3test.StartIfFound() })
	if srvErr != nil {
		t.Fatal(srvErr)
	}
	if srv == nil {
		t.Skip(s3test.SkipMessage)
	}
	cfg, err := srv.NewBucket(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(s3.EnvEndpoint, "http://"+cfg.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", string(cfg.SecretKey))
	t.Setenv("AWS_SESSION_TOKEN", "")
	return "s3://" + cfg.Bucket + "/" + prefix, cfg
}

// TestS3Stack runs the conformance suite over a bucket opened with every
// decorator.
func TestS3Stack(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		if strings.HasSuffix(t.Name(), "/Hierarchy") {
			t.Skip("MinIO cannot list both of two objects \"a\" and \"a/b\"; see package s3")
		}
		loc, _ := bucket(t, "") // a prefix would make the longest valid name too long a key
		b, err := location.Open(t.Context(), loc, location.Options{Bandwidth: 1e12, CleanTemp: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestS3CleanAtOpen: opening with CleanTemp aborts the incomplete
// multipart uploads under the prefix that are older than it, and leaves
// younger ones and those of other prefixes.
func TestS3CleanAtOpen(t *testing.T) {
	loc, cfg := bucket(t, "job/")
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: c}
	start := func(key string) {
		if _, err := core.NewMultipartUpload(t.Context(), cfg.Bucket, key, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start("job/ckpt.1/rank-0/state")
	start("other/ckpt.1/rank-0/state")
	time.Sleep(1100 * time.Millisecond) // older than the second below
	start("job/ckpt.2/rank-0/state")
	uploads := func() []string {
		var keys []string
		for up := range c.ListIncompleteUploads(t.Context(), cfg.Bucket, "", true) {
			if up.Err != nil {
				t.Fatal(up.Err)
			}
			keys = append(keys, up.Key)
		}
		return keys
	}
	if got := uploads(); len(got) != 3 {
		t.Fatalf("uploads before = %q", got)
	}
	removed := -1
	b, err := location.Open(t.Context(), loc, location.Options{
		CleanTemp: 500 * time.Millisecond,
		OnClean: func(n int, err error) {
			if err != nil {
				t.Errorf("cleanup: %v", err)
			}
			removed = n
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if removed != 1 {
		t.Errorf("cleanup removed %d uploads, want 1", removed)
	}
	got := strings.Join(uploads(), " ")
	if got != "job/ckpt.2/rank-0/state other/ckpt.1/rank-0/state" && got != "other/ckpt.1/rank-0/state job/ckpt.2/rank-0/state" {
		t.Errorf("uploads left = %q, want the young one and the other prefix's", got)
	}
}
