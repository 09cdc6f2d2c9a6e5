// Package s3test runs a MinIO server for tests of the s3 backend and of
// anything that uses it.
//
// MinIO is licensed under the AGPL. It only ever runs here as a separate
// process, from a binary found at run time (see Binary); nothing of it is
// imported or linked. scripts/minio.sh builds the binary.
//
// A test package typically starts one server in TestMain and a bucket per
// test:
//
//	func TestMain(m *testing.M) {
//		srv, err := s3test.StartIfFound()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		srv.Close() // nil-safe
//		os.Exit(code)
//	}
//
// and tests call srv.NewBucket, or t.Skip(s3test.SkipMessage) if srv is nil.
// With CKPT_REQUIRE_S3=1 or CI=true a missing binary is an error instead,
// and the tests fail rather than skip.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ckpt/ckpt/internal/storage/s3"
)

// EnvBinary names the environment variable that gives the path of the
// minio binary.
const EnvBinary = "CKPT_MINIO"

// EnvRequire names the environment variable that, set to 1, makes a
// missing binary an error instead of a reason to skip: a CI run must not
// lose the S3 tests silently. CI=true (set by CI systems) does the same.
const EnvRequire = "CKPT_REQUIRE_S3"

// Required reports whether the S3 tests must run: $CKPT_REQUIRE_S3 is 1
// or $CI is true.
func Required() bool {
	return os.Getenv(EnvRequire) == "1" || os.Getenv("CI") == "true"
}

// DefaultBinary is where the binary is looked for last.
const DefaultBinary = "/tmp/minio-bin/minio"

var defaultBinary = DefaultBinary // replaced by tests

// SkipMessage is what tests say when they skip for want of a binary.
const SkipMessage = "MinIO not found: set " + EnvBinary + " or run scripts/minio.sh; skipping S3 conformance tests"

// ErrNotFound reports that Binary found no minio binary.
var ErrNotFound = errors.New(SkipMessage)

// Binary returns the path of the minio server binary: $CKPT_MINIO if set
// (an error if it is not an executable file, so that a CI that sets it
// cannot skip the tests silently), else "minio" on $PATH, else
// DefaultBinary, else an error wrapping ErrNotFound — or, when Required,
// an error that does not, so that the tests fail instead of skipping.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("s3test: $%s: %w", EnvBinary, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("s3test: $%s=%s is not an executable file", EnvBinary, p)
		}
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	if fi, err := os.Stat(defaultBinary); err == nil && fi.Mode().IsRegular() {
		return defaultBinary, nil
	}
	if Required() {
		return "", fmt.Errorf("s3test: the S3 tests must run here ($%s=1 or $CI=true) and no MinIO binary was found: set %s to one, or run scripts/minio.sh",
			EnvRequire, EnvBinary)
	}
	return "", ErrNotFound
}

// Server is a MinIO server on a loopback port, storing its data in a
// temporary directory. Its methods are safe for concurrent use.
type Server struct {
	Binary    string
	Endpoint  string // "127.0.0.1:PORT", plain http
	AccessKey string
	SecretKey string
	dir       string // data directory
	logPath   string

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has exited
	err  error         // cmd's exit status, once exit is closed
}

// StartIfFound starts a server if Binary finds one, and returns nil, nil if
// it finds none.
func StartIfFound() (*Server, error) {
	bin, err := Binary()
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Start(bin)
}

// Start starts the server bin with a new data directory and random
// credentials, on a free loopback port, and waits until it serves.
func Start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "ckpt-minio-")
	if err != nil {
		return nil, fmt.Errorf("s3test: %w", err)
	}
	s := &Server{
		Binary:    bin,
		AccessKey: "ckpt-" + randomHex(4),
		SecretKey: randomHex(16),
		dir:       filepath.Join(dir, "data"),
		logPath:   filepath.Join(dir, "minio.log"),
	}
	// A port found free may be taken before the server binds it: try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err = s.Restart()
		if err == nil {
			return s, nil
		}
		if attempt == 2 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// Restart starts the server again after Kill, on the same port and data.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("s3test: server is running")
	}
	log, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command(s.Binary, "server", "--quiet", "--address", s.Endpoint, s.dir)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	cmd.Stdout, cmd.Stderr = log, log
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: starting %s: %w", s.Binary, err)
	}
	s.cmd = cmd
	s.exit = make(chan struct{})
	go func(exit chan struct{}) {
		s.err = cmd.Wait()
		close(exit)
	}(s.exit)
	if err := s.waitReady(30 * time.Second); err != nil {
		s.kill()
		return fmt.Errorf("%w\n%s", err, s.logTail())
	}
	return nil
}

// waitReady polls until the server serves S3 requests. The liveness
// endpoint answers 200 as soon as the process listens, but until the
// object layer is up every request fails with 503 "Server not initialized
// yet" (a list right after Restart did, on a busy machine). An anonymous
// request to the service shows that as well as a signed one: 503 before,
// an access error after.
func (s *Server) waitReady(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exit:
			return fmt.Errorf("s3test: minio exited before it served: %v", s.err)
		default:
		}
		status, err := s.probe(client, "/minio/health/live")
		if err == nil && status == http.StatusOK {
			if status, err = s.probe(client, "/"); err == nil && status != http.StatusServiceUnavailable {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3test: minio at %s not serving after %v (last: status %d, %v)", s.Endpoint, timeout, status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probe is the status of a GET of path on the server.
func (s *Server) probe(client *http.Client, path string) (int, error) {
	resp, err := client.Get("http://" + s.Endpoint + path)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Kill kills the server (SIGKILL, no shutdown) and waits until it has
// exited. Restart starts it again.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.cmd = nil
}

// Close kills the server and removes its data. It may be called on nil.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.Kill()
	return os.RemoveAll(filepath.Dir(s.dir))
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return "minio log (" + s.logPath + "):\n" + string(bytes.TrimSpace(data))
}

// Client returns a minio client for the server, as its root user.
func (s *Server) Client() (*minio.Client, error) {
	return minio.New(s.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
	})
}

var bucketSeq atomic.Int64

// NewBucket creates a bucket with a new name and returns a Config of the
// s3 backend for it.
func (s *Server) NewBucket(ctx context.Context) (s3.Config, error) {
	client, err := s.Client()
	if err != nil {
		return s3.Config{}, err
	}
	name := fmt.Sprintf("ckpt-test-%d", bucketSeq.Add(1))
	if err := client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		return s3.Config{}, fmt.Errorf("s3test: making bucket %s: %w", name, err)
	}
	return s.Config(name), nil
}

// Config returns a Config of the s3 backend for bucket on the server.
func (s *Server) Config(bucket string) s3.Config {
	return s3.Config{
		Endpoint:  s.Endpoint,
		Bucket:    bucket,
		AccessKey: s.AccessKey,
		SecretKey: s3.Secret(s.SecretKey),
	}
}

// Pid returns the process ID of the running server, or 0.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// DataDir returns the server's data directory.
func (s *Server) DataDir() string { return s.dir }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("s3test: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}
