package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

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

// server returns the shared server, skipping the test if there is no
// MinIO binary.
func server(t testing.TB) *s3test.Server {
	t.Helper()
	srvOnce.Do(func() { srv, srvErr = s3test.StartIfFound() })
	if srvErr != nil {
		t.Fatal(srvErr)
	}
	if srv == nil {
		t.Skip(s3test.SkipMessage)
	}
	return srv
}

func TestMain(m *testing.M) {
	if url := os.Getenv(crashEnv); url != "" {
		crashWhileWriting(url)
	}
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// newBackend returns a backend on a new bucket of s, with cfg's changes.
func newBackend(t testing.TB, s *s3test.Server, change func(*s3.Config)) *s3.Backend {
	t.Helper()
	cfg, err := s.NewBucket(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&cfg)
	}
	b, err := s3.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBackend(t *testing.T) {
	s := server(t)
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		if strings.HasSuffix(t.Name(), "/Hierarchy") {
			// MinIO stores a key as a directory holding its data: it
			// accepts "a" and "a/b" both, serves both, but lists only
			// one of them. Amazon S3 lists both.
			t.Skip("MinIO cannot list both of two objects \"a\" and \"a/b\"; see the package documentation")
		}
		return newBackend(t, s, nil)
	})
}

// rawClient returns a minio client of the server, for looking behind the
// backend's back.
func rawClient(t testing.TB, s *s3test.Server) *minio.Client {
	t.Helper()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// incompleteUploads returns the keys of the bucket's incomplete uploads.
func incompleteUploads(t testing.TB, s *s3test.Server, bucket string) []string {
	t.Helper()
	var keys []string
	for up := range rawClient(t, s).ListIncompleteUploads(t.Context(), bucket, "", true) {
		if up.Err != nil {
			t.Fatal(up.Err)
		}
		keys = append(keys, up.Key)
	}
	return keys
}

func listAll(t testing.TB, b storage.Backend) []string {
	t.Helper()
	var names []string
	if err := b.List(t.Context(), "", func(info storage.Info) error {
		names = append(names, info.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

func randomBytes(n int) []byte {
	p := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)}).Read(p)
	return p
}

// write creates name, writes data in chunks of 1 MiB + 1 and returns the
// uncommitted Writer.
func write(t testing.TB, b storage.Backend, name string, data []byte) storage.Writer {
	t.Helper()
	w, err := b.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for p := data; len(p) > 0; {
		n := min(len(p), 1<<20+1)
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		p = p[n:]
	}
	return w
}

// TestStreaming writes objects around the part size, which take the single
// PUT or the multipart upload, with parts uploaded one or three at a time.
func TestStreaming(t *testing.T) {
	s := server(t)
	const part = s3.MinPartSize
	for _, concurrency := range []int{1, 3} {
		t.Run(fmt.Sprint("concurrency=", concurrency), func(t *testing.T) {
			b := newBackend(t, s, func(c *s3.Config) {
				c.PartSize = part
				c.Concurrency = concurrency
			})
			ctx := t.Context()
			for _, size := range []int{part - 1, part, part + 1, 3*part + 7} {
				name := fmt.Sprintf("obj-%d", size)
				data := randomBytes(size)
				if err := write(t, b, name, data).Commit(); err != nil {
					t.Fatalf("Commit(%d bytes): %v", size, err)
				}
				if got, err := storage.Load(ctx, b, name); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("Load(%d bytes): %d bytes, %v", size, len(got), err)
				}
				// A multipart upload's ETag ends in "-<parts>".
				oi, err := rawClient(t, s).StatObject(ctx, b.Config().Bucket, name, minio.StatObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				multipart := strings.Contains(oi.ETag, "-")
				if want := size > part; multipart != want {
					t.Errorf("%d bytes: ETag %q, want multipart %v", size, oi.ETag, want)
				}
			}
			if ups := incompleteUploads(t, s, b.Config().Bucket); len(ups) != 0 {
				t.Errorf("incomplete uploads after commits: %q", ups)
			}
		})
	}
}

// TestAbortStreaming aborts writers in the middle of a multipart upload and
// after a failed write: no object, and no incomplete upload, remains.
func TestAbortStreaming(t *testing.T) {
	s := server(t)
	b := newBackend(t, s, func(c *s3.Config) { c.PartSize = s3.MinPartSize; c.Concurrency = 2 })
	ctx := t.Context()
	save(t, b, "old", []byte("old"))
	for _, name := range []string{"new", "old"} {
		w := write(t, b, name, randomBytes(4*s3.MinPartSize+5))
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
	}
	if got := listAll(t, b); !slices.Equal(got, []string{"old"}) {
		t.Errorf("List after aborts = %q, want [old]", got)
	}
	if got, err := storage.Load(ctx, b, "old"); err != nil || string(got) != "old" {
		t.Errorf("old object after aborted replace = %q, %v", got, err)
	}
	if ups := incompleteUploads(t, s, b.Config().Bucket); len(ups) != 0 {
		t.Errorf("incomplete uploads after Abort: %q", ups)
	}

	// A context that ends mid-upload fails the writer; Commit cleans up.
	wctx, cancel := context.WithCancel(ctx)
	w, err := b.Create(wctx, "canceled")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(2*s3.MinPartSize + 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	var werr error
	for range 10 {
		if _, werr = w.Write(make([]byte, s3.MinPartSize)); werr != nil {
			break
		}
	}
	if !errors.Is(werr, context.Canceled) {
		t.Errorf("Write after cancel = %v, want context.Canceled", werr)
	}
	if err := w.Commit(); err == nil {
		t.Errorf("Commit after a failed Write: no error")
	}
	if _, err := b.Stat(ctx, "canceled"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after failed Commit = %v, want ErrNotExist", err)
	}
	if ups := incompleteUploads(t, s, b.Config().Bucket); len(ups) != 0 {
		t.Errorf("incomplete uploads after a failed write: %q", ups)
	}
}

// TestServerDies kills the server while a writer uploads: Commit fails with
// a transient error, and once the server is back nothing is listed and
// CleanTemp removes the upload that could not be aborted.
func TestServerDies(t *testing.T) {
	bin, err := s3test.Binary()
	if errors.Is(err, s3test.ErrNotFound) {
		t.Skip(s3test.SkipMessage)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := s3test.Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := newBackend(t, s, func(c *s3.Config) {
		c.PartSize = s3.MinPartSize
		c.Concurrency = 1 // so that a Write returns only after the part before it is uploaded
		c.MaxRetries = 1
	})
	ctx := t.Context()
	save(t, b, "committed", []byte("before"))
	w := write(t, b, "torn", randomBytes(2*s3.MinPartSize+1))
	s.Kill()
	var werr error
	for range 4 {
		if _, werr = w.Write(make([]byte, s3.MinPartSize)); werr != nil {
			break
		}
	}
	cerr := w.Commit()
	if cerr == nil {
		t.Fatal("Commit with the server dead: no error")
	}
	if storage.IsPermanent(cerr) {
		t.Errorf("Commit with the server dead: IsPermanent(%v) = true, want a transient error", cerr)
	}
	t.Logf("write error: %v\ncommit error: %v", werr, cerr)

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, b); !slices.Equal(got, []string{"committed"}) {
		t.Errorf("List after restart = %q, want [committed]", got)
	}
	if _, err := b.Stat(ctx, "torn"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat(torn) = %v, want ErrNotExist", err)
	}
	// The upload that the dead server could not abort: invisible, but
	// holding its parts. MinIO lists the uploads of a whole bucket only
	// from memory, so after its restart CleanTemp finds none (MinIO
	// expires them itself after a day); Amazon S3 lists them all.
	n, err := b.CleanTemp(ctx, 0)
	if err != nil || n > 1 {
		t.Errorf("CleanTemp(0) = %d, %v; want at most the 1 upload left by the dead server", n, err)
	}
	var left []string
	for up := range rawClient(t, s).ListIncompleteUploads(ctx, b.Config().Bucket, "torn", true) {
		left = append(left, up.UploadID)
	}
	if n+len(left) != 1 {
		t.Errorf("CleanTemp removed %d uploads and left %d of the torn object; want 1 in all", n, len(left))
	}
	t.Logf("CleanTemp after the restart removed %d upload(s); %d left for the server to expire", n, len(left))
}

func TestWrongCredentials(t *testing.T) {
	s := server(t)
	cfg, err := s.NewBucket(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, access, secret string }{
		{"wrong secret key", cfg.AccessKey, "not-the-secret"},
		{"unknown access key", "nobody", "whatever-secret"},
		{"anonymous", "", ""},
	} {
		bad := cfg
		bad.AccessKey, bad.SecretKey = c.access, s3.Secret(c.secret)
		_, err := s3.New(t.Context(), bad)
		if !errors.Is(err, s3.ErrAccessDenied) || !errors.Is(err, fs.ErrPermission) || !storage.IsPermanent(err) {
			t.Errorf("%s: New = %v, want a permanent ErrAccessDenied", c.what, err)
			continue
		}
		if !strings.Contains(err.Error(), cfg.Bucket) || strings.Contains(err.Error(), c.secret) && c.secret != "" {
			t.Errorf("%s: error %q should name the bucket and not the secret", c.what, err)
		}
		t.Logf("%s: %v", c.what, err)
	}
}

func TestMissingBucket(t *testing.T) {
	s := server(t)
	cfg := s.Config("no-such-bucket")
	_, err := s3.New(t.Context(), cfg)
	if !errors.Is(err, s3.ErrNoSuchBucket) || !storage.IsPermanent(err) || !strings.Contains(err.Error(), `"no-such-bucket"`) {
		t.Errorf("New on a missing bucket = %v, want a permanent ErrNoSuchBucket naming it", err)
	}
	t.Logf("New: %v", err)

	// A bucket removed under a backend.
	b := newBackend(t, s, nil)
	ctx := t.Context()
	if err := rawClient(t, s).RemoveBucket(ctx, b.Config().Bucket); err != nil {
		t.Fatal(err)
	}
	_, err = b.Stat(ctx, "x")
	if !errors.Is(err, s3.ErrNoSuchBucket) || errors.Is(err, storage.ErrNotExist) ||
		!storage.IsPermanent(err) || !strings.Contains(err.Error(), b.Config().Bucket) {
		t.Errorf("Stat in a removed bucket = %v, want a permanent ErrNoSuchBucket naming it", err)
	}
	t.Logf("Stat: %v", err)
	_, err = storage.Save(ctx, b, "x", strings.NewReader("data"))
	if !errors.Is(err, s3.ErrNoSuchBucket) {
		t.Errorf("Save in a removed bucket = %v, want ErrNoSuchBucket", err)
	}
}

func TestUnreachable(t *testing.T) {
	start := time.Now()
	_, err := s3.New(t.Context(), s3.Config{Endpoint: "127.0.0.1:1", Bucket: "bucket", MaxRetries: 1})
	if err == nil || storage.IsPermanent(err) {
		t.Errorf("New with no server = %v, want a transient error", err)
	}
	t.Logf("after %v: %v", time.Since(start), err)
}

// TestPrefix checks that a backend sees only the keys under its prefix,
// without the prefix, and that a name too long to fit the key is rejected.
func TestPrefix(t *testing.T) {
	s := server(t)
	b := newBackend(t, s, func(c *s3.Config) { c.Prefix = "run/7" })
	ctx := t.Context()
	bucket := b.Config().Bucket
	if got := b.Config().Prefix; got != "run/7/" {
		t.Fatalf("Prefix = %q, want run/7/", got)
	}
	save(t, b, "a/b", []byte("ab"))
	save(t, b, "c", []byte("c"))
	raw := rawClient(t, s)
	if _, err := raw.StatObject(ctx, bucket, "run/7/a/b", minio.StatObjectOptions{}); err != nil {
		t.Errorf("object a/b is not the key run/7/a/b: %v", err)
	}
	// Keys that are not objects of this backend.
	for _, key := range []string{"run/7x", "run/other", "top", "run/7/dir/", "run/7/" + storage.TempPrefix + "x"} {
		if _, err := raw.PutObject(ctx, bucket, key, strings.NewReader("foreign"), 7, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := listAll(t, b); !slices.Equal(got, []string{"a/b", "c"}) {
		t.Errorf("List = %q, want [a/b c]", got)
	}
	long := strings.Repeat("n/", 400) + strings.Repeat("n", 224) // 1024 bytes
	if err := storage.ValidName(long); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, long); err == nil || !storage.IsPermanent(err) {
		t.Errorf("Create of a name too long for the prefix = %v, want a permanent error", err)
	}
	if _, err := b.Stat(ctx, long); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of a name too long for the prefix = %v, want ErrNotExist", err)
	}
}

// TestCleanTemp leaves a writer's upload without Commit or Abort, as a
// writer that hangs or whose process died, and has CleanTemp remove it.
func TestCleanTemp(t *testing.T) {
	s := server(t)
	b := newBackend(t, s, func(c *s3.Config) { c.PartSize = s3.MinPartSize; c.Prefix = "mine" })
	ctx := t.Context()
	bucket := b.Config().Bucket
	other, err := s3.New(ctx, s3.Config{
		Endpoint: s.Endpoint, Bucket: bucket, AccessKey: s.AccessKey, SecretKey: s3.Secret(s.SecretKey),
		PartSize: s3.MinPartSize, Prefix: "other",
	})
	if err != nil {
		t.Fatal(err)
	}
	ws := []storage.Writer{
		write(t, b, "x/abandoned", randomBytes(2*s3.MinPartSize+1)),
		write(t, other, "x/abandoned", randomBytes(2*s3.MinPartSize+1)),
	}
	defer ws[1].Abort()
	if got := listAll(t, b); len(got) != 0 {
		t.Errorf("List with an uncommitted upload = %q", got)
	}
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("CleanTemp(1h) of a fresh upload = %d, %v; want 0, nil", n, err)
	}
	if n, err := b.CleanTemp(ctx, 0); err != nil || n != 1 {
		t.Errorf("CleanTemp(0) = %d, %v; want 1 (not the other prefix's), nil", n, err)
	}
	if ups := incompleteUploads(t, s, bucket); !slices.Equal(ups, []string{"other/x/abandoned"}) {
		t.Errorf("incomplete uploads after CleanTemp = %q, want only the other prefix's", ups)
	}
	// The writer's upload is gone: Commit fails and publishes nothing.
	if err := ws[0].Commit(); err == nil {
		t.Errorf("Commit of a cleaned upload: no error")
	}
	if _, err := b.Stat(ctx, "x/abandoned"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after failed Commit = %v, want ErrNotExist", err)
	}
}

// crashEnv makes the test binary a writer that dies in an upload (see
// TestMain): its value is the s3:// URL, the endpoint and credentials come
// from the environment as ParseURL reads them.
const crashEnv = "CKPT_S3_TEST_CRASH_URL"

func crashWhileWriting(url string) {
	cfg, err := s3.ParseURL(url)
	if err != nil {
		panic(err)
	}
	cfg.PartSize = s3.MinPartSize
	cfg.Concurrency = 1
	ctx := context.Background()
	b, err := s3.New(ctx, cfg)
	if err != nil {
		panic(err)
	}
	if _, err := storage.Save(ctx, b, "ckpt.0000/MANIFEST", strings.NewReader("complete")); err != nil {
		panic(err)
	}
	w, err := b.Create(ctx, "ckpt.0001/rank-0/state.bin")
	if err != nil {
		panic(err)
	}
	// With one part in flight, the second Write returns once the first
	// part is stored.
	for range 2 {
		if _, err := w.Write(make([]byte, s3.MinPartSize+1)); err != nil {
			panic(err)
		}
	}
	p, _ := os.FindProcess(os.Getpid())
	p.Kill() // SIGKILL: no deferred call, no Abort
	select {}
}

func TestCrashedWriter(t *testing.T) {
	s := server(t)
	b := newBackend(t, s, func(c *s3.Config) { c.Prefix = "ckpt" })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		crashEnv+"=s3://"+b.Config().Bucket+"/ckpt",
		s3.EnvEndpoint+"=http://"+s.Endpoint,
		"AWS_ACCESS_KEY_ID=", // so that the MinIO variables count
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
	)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Exited() {
		t.Fatalf("crashing writer: want death by signal, got %v\n%s", err, out)
	}
	ctx := t.Context()
	if got := listAll(t, b); !slices.Equal(got, []string{"ckpt.0000/MANIFEST"}) {
		t.Errorf("List after crash = %q, want only the committed manifest", got)
	}
	if _, err := b.Stat(ctx, "ckpt.0001/rank-0/state.bin"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of the torn object = %v, want ErrNotExist", err)
	}
	if ups := incompleteUploads(t, s, b.Config().Bucket); !slices.Equal(ups, []string{"ckpt/ckpt.0001/rank-0/state.bin"}) {
		t.Fatalf("incomplete uploads after crash = %q, want the torn object's", ups)
	}
	if n, err := b.CleanTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("CleanTemp(1h) of a fresh upload = %d, %v; want 0, nil", n, err)
	}
	if n, err := b.CleanTemp(ctx, 0); err != nil || n != 1 {
		t.Errorf("CleanTemp(0) = %d, %v; want 1, nil", n, err)
	}
	if ups := incompleteUploads(t, s, b.Config().Bucket); len(ups) != 0 {
		t.Errorf("incomplete uploads after CleanTemp: %q", ups)
	}
	if got, err := storage.Load(ctx, b, "ckpt.0000/MANIFEST"); err != nil || string(got) != "complete" {
		t.Errorf("manifest after CleanTemp = %q, %v", got, err)
	}
}

func TestProperties(t *testing.T) {
	s := server(t)
	b := newBackend(t, s, nil)
	if got := storage.PropertiesOf(b); got != (storage.Properties{Connections: s3.DefaultConnections, Hierarchical: false}) {
		t.Errorf("Properties = %+v", got)
	}
	b = newBackend(t, s, func(c *s3.Config) { c.Connections = 64 })
	if got := storage.PropertiesOf(b).Connections; got != 64 {
		t.Errorf("Connections = %d, want 64", got)
	}
	if _, ok := storage.As[storage.Cleaner](b); !ok {
		t.Errorf("not a storage.Cleaner")
	}
	if got, want := b.String(), "s3://"+b.Config().Bucket+"/ at http://"+s.Endpoint; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// save commits data under name.
func save(t testing.TB, b storage.Backend, name string, data []byte) {
	t.Helper()
	if _, err := storage.Save(t.Context(), b, name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}
