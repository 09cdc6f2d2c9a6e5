package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ckpt/ckpt/storage"
)

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Cleaner   = (*Backend)(nil)
	_ storage.Describer = (*Backend)(nil)
	_ storage.Writer    = (*writer)(nil)
)

// Backend stores objects in a bucket of an S3-compatible server.
type Backend struct {
	cfg       Config
	client    *minio.Client
	core      minio.Core
	transport *http.Transport
	putOpts   minio.PutObjectOptions
	closed    atomic.Bool
}

// New returns a backend for cfg. It checks that the bucket exists and that
// the credentials grant access to it, so that a wrong configuration fails
// here: with an error wrapping ErrNoSuchBucket or ErrAccessDenied (both
// permanent), or with a transient one if the server cannot be reached.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	return newBackend(ctx, cfg, nil)
}

// newBackend is New, with tweak (if not nil) changing the client's options
// and the upload options before they are used; benchmarks use it to measure
// minio-go's defaults.
func newBackend(ctx context.Context, cfg Config, tweak func(*minio.Options, *minio.PutObjectOptions)) (*Backend, error) {
	if err := cfg.normalize(); err != nil {
		return nil, storage.Permanent(err)
	}
	tr, err := minio.DefaultTransport(cfg.UseTLS)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	// Every part in flight, and every concurrent operation, holds a
	// connection; keep them all for reuse. (Larger buffers than net/http's
	// 4 KiB made no difference to throughput on loopback.)
	tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, cfg.Connections*cfg.Concurrency)
	tr.MaxIdleConns = max(tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	opts := &minio.Options{
		// Empty keys mean anonymous access.
		Creds:     credentials.NewStaticV4(cfg.AccessKey, string(cfg.SecretKey), string(cfg.SessionToken)),
		Secure:    cfg.UseTLS,
		Transport: tr,
		Region:    cfg.Region,
		// minio-go sends S3's additional checksums only with this: it
		// declares the algorithm when a multipart upload starts, and
		// accepts the CRC that putSmall computes.
		TrailingHeaders: !cfg.DisableChecksum,
		MaxRetries:      cfg.MaxRetries,
	}
	putOpts := minio.PutObjectOptions{
		PartSize:              uint64(cfg.PartSize),
		NumThreads:            uint(cfg.Concurrency),
		ConcurrentStreamParts: cfg.Concurrency > 1,
		// No SHA-256 of the body (see the package documentation), and no
		// MD5 either.
		DisableContentSha256: true,
		SendContentMd5:       false,
	}
	if !cfg.DisableChecksum {
		putOpts.AutoChecksum = minio.ChecksumCRC32C
	}
	if tweak != nil {
		tweak(opts, &putOpts)
	}
	client, err := minio.New(cfg.Endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("s3: endpoint %s: %w", cfg.url(), err)
	}
	b := &Backend{
		cfg:       cfg,
		client:    client,
		core:      minio.Core{Client: client},
		transport: tr,
		putOpts:   putOpts,
	}
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		tr.CloseIdleConnections()
		err = b.cause(err)
		if !errors.Is(err, ErrAccessDenied) {
			err = fmt.Errorf("s3: checking bucket %q at %s: %w", cfg.Bucket, cfg.url(), err)
		}
		return nil, err
	}
	if !ok {
		tr.CloseIdleConnections()
		return nil, storage.Permanent(fmt.Errorf("s3: bucket %q at %s: %w", cfg.Bucket, cfg.url(), ErrNoSuchBucket))
	}
	return b, nil
}

// String returns the backend's location, "s3://BUCKET/PREFIX at ENDPOINT".
func (b *Backend) String() string {
	return "s3://" + b.cfg.Bucket + "/" + b.cfg.Prefix + " at " + b.cfg.url()
}

// Config returns the backend's configuration, with defaults filled in.
func (b *Backend) Config() Config { return b.cfg }

// key returns the key of a valid name.
func (b *Backend) key(name string) string { return b.cfg.Prefix + name }

// check returns the error that an operation op on name must fail with
// before it starts, if any.
func (b *Backend) check(ctx context.Context, op, name string) error {
	if err := storage.Precheck(ctx, op, name, b.closed.Load()); err != nil {
		return err
	}
	if op != "list" && op != "create" && len(b.key(name)) > MaxKeyLen {
		// No such key can exist.
		return &storage.Error{Op: op, Name: name, Err: storage.ErrNotExist}
	}
	return nil
}

// fail wraps an error of the client for operation op on name.
func (b *Backend) fail(op, name string, err error) error {
	return &storage.Error{Op: op, Name: name, Err: b.cause(err)}
}

// Create implements storage.Backend.
func (b *Backend) Create(ctx context.Context, name string) (storage.Writer, error) {
	if err := b.check(ctx, "create", name); err != nil {
		return nil, err
	}
	key := b.key(name)
	if len(key) > MaxKeyLen {
		return nil, &storage.Error{Op: "create", Name: name, Err: storage.Permanent(
			fmt.Errorf("key %q has %d bytes, more than S3's %d", key, len(key), MaxKeyLen))}
	}
	return &writer{b: b, ctx: ctx, name: name, key: key}, nil
}

// Open implements storage.Backend.
func (b *Backend) Open(ctx context.Context, name string, offset, length int64) (io.ReadCloser, error) {
	if err := b.check(ctx, "open", name); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, &storage.Error{Op: "open", Name: name, Err: fmt.Errorf("negative offset %d", offset)}
	}
	if length == 0 {
		// No bytes to read, but a missing object is still an error.
		if _, err := b.client.StatObject(ctx, b.cfg.Bucket, b.key(name), minio.StatObjectOptions{}); err != nil {
			return nil, b.fail("open", name, err)
		}
		return http.NoBody, nil
	}
	var opts minio.GetObjectOptions
	switch {
	case length > 0 && length <= math.MaxInt64-offset:
		err := opts.SetRange(offset, offset+length-1)
		if err != nil {
			return nil, &storage.Error{Op: "open", Name: name, Err: err}
		}
	case offset > 0:
		_ = opts.SetRange(offset, 0) // "bytes=offset-": to the end
	}
	body, _, _, err := b.core.GetObject(ctx, b.cfg.Bucket, b.key(name), opts)
	if err != nil {
		if minio.ToErrorResponse(err).Code == "InvalidRange" {
			// The object exists (S3 checks the key first), but the range
			// starts at or after its end: no bytes.
			return http.NoBody, nil
		}
		return nil, b.fail("open", name, err)
	}
	return &reader{body: body, name: name}, nil
}

// reader is the body of a GET response.
type reader struct {
	body io.ReadCloser
	name string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err != nil && err != io.EOF {
		err = &storage.Error{Op: "read", Name: r.name, Err: err}
	}
	return n, err
}

func (r *reader) Close() error { return r.body.Close() }

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, name string) (storage.Info, error) {
	if err := b.check(ctx, "stat", name); err != nil {
		return storage.Info{}, err
	}
	oi, err := b.client.StatObject(ctx, b.cfg.Bucket, b.key(name), minio.StatObjectOptions{})
	if err != nil {
		return storage.Info{}, b.fail("stat", name, err)
	}
	return storage.Info{Name: name, Size: oi.Size}, nil
}

// List implements storage.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.Info) error) error {
	if err := b.check(ctx, "list", prefix); err != nil {
		return err
	}
	if len(b.key(prefix)) > MaxKeyLen {
		return nil
	}
	// Breaking out of the loop stops the listing; canceling ctx stops a
	// page request in flight.
	objects := b.client.ListObjectsIter(ctx, b.cfg.Bucket, minio.ListObjectsOptions{
		Prefix:    b.key(prefix),
		Recursive: true,
	})
	for oi := range objects {
		if oi.Err != nil {
			return b.fail("list", prefix, oi.Err)
		}
		name, ok := strings.CutPrefix(oi.Key, b.cfg.Prefix)
		if !ok || storage.ValidName(name) != nil {
			continue
		}
		if err := fn(storage.Info{Name: name, Size: oi.Size}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return &storage.Error{Op: "list", Name: prefix, Err: err}
	}
	return nil
}

// Remove implements storage.Backend. See the package documentation for the
// race between its two requests.
func (b *Backend) Remove(ctx context.Context, name string) error {
	if err := b.check(ctx, "remove", name); err != nil {
		return err
	}
	key := b.key(name)
	if _, err := b.client.StatObject(ctx, b.cfg.Bucket, key, minio.StatObjectOptions{}); err != nil {
		return b.fail("remove", name, err)
	}
	if err := b.client.RemoveObject(ctx, b.cfg.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return b.fail("remove", name, err)
	}
	return nil
}

// Close implements storage.Backend. It closes idle connections.
func (b *Backend) Close() error {
	b.closed.Store(true)
	b.transport.CloseIdleConnections()
	return nil
}

// Properties implements storage.Describer: keys are flat, and the server
// serves Config.Connections operations at once.
func (b *Backend) Properties() storage.Properties {
	return storage.Properties{Connections: b.cfg.Connections, Hierarchical: false}
}

// CleanTemp implements storage.Cleaner: it aborts the incomplete multipart
// uploads of keys under the prefix that were started more than olderThan
// ago (the server's start time against this machine's clock), which drops
// their parts. A live Writer's upload starts when its first part is full,
// so olderThan must exceed the time that writing one object may take, plus
// the clocks' skew.
//
// It lists all incomplete uploads of the bucket and picks those under the
// prefix itself, since MinIO lists uploads only for the whole bucket or for
// one exact key. MinIO lists a whole bucket's uploads from memory, so it
// reports only those started since the server last started: an upload
// torn by a restart of the server is left to MinIO's own expiry.
func (b *Backend) CleanTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, &storage.Error{Op: "clean", Name: "", Err: err}
	}
	if b.closed.Load() {
		return 0, &storage.Error{Op: "clean", Name: "", Err: storage.ErrClosed}
	}
	cutoff := time.Now().Add(-olderThan)
	removed := 0
	var errs []error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine
	for up := range b.client.ListIncompleteUploads(ctx, b.cfg.Bucket, "", true) {
		if up.Err != nil {
			errs = append(errs, b.cause(up.Err))
			break
		}
		if !strings.HasPrefix(up.Key, b.cfg.Prefix) || !up.Initiated.Before(cutoff) {
			continue
		}
		err := b.core.AbortMultipartUpload(ctx, b.cfg.Bucket, up.Key, up.UploadID)
		if err != nil && minio.ToErrorResponse(err).Code != "NoSuchUpload" {
			errs = append(errs, fmt.Errorf("aborting upload of %q: %w", up.Key, b.cause(err)))
			continue
		}
		if err == nil {
			removed++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, &storage.Error{Op: "clean", Name: "", Err: err}
	}
	return removed, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errAborted ends the upload of an aborted Writer.
var errAborted = errors.New("writer aborted")

// writer buffers the head of an object and, once it outgrows a part,
// streams it through a pipe into PutObject.
type writer struct {
	b    *Backend
	ctx  context.Context
	name string
	key  string
	head []byte // the bytes before the upload starts

	// Once the upload runs: Write feeds pw; the upload goroutine sets
	// upErr and closes done when PutObject returns.
	pw    *io.PipeWriter
	done  chan struct{}
	upErr error

	err    error // first failed write: Commit fails with it
	closed bool  // Commit or Abort was called
}

func (w *writer) Write(p []byte) (int, error) {
	switch {
	case w.closed:
		return 0, &storage.Error{Op: "write", Name: w.name, Err: storage.ErrClosed}
	case w.err != nil:
		return 0, w.err
	case w.pw == nil && len(w.head)+len(p) <= int(w.b.cfg.PartSize):
		w.head = append(w.head, p...)
		return len(p), nil
	case w.pw == nil:
		w.start()
		_, err := w.pw.Write(w.head)
		w.head = nil
		if err != nil {
			return 0, w.writeFailed(err)
		}
	}
	n, err := w.pw.Write(p)
	if err != nil {
		return n, w.writeFailed(err)
	}
	return n, nil
}

// writeFailed records err, the upload's error that the pipe returned.
func (w *writer) writeFailed(err error) error {
	if errors.Is(err, io.ErrClosedPipe) {
		// PutObject returned without error before the end of the input:
		// only if the object outgrew MaxParts parts.
		err = fmt.Errorf("object larger than %d parts of %d bytes", MaxParts, w.b.cfg.PartSize)
	}
	w.err = w.b.fail("write", w.name, err)
	return w.err
}

// start starts the multipart upload, reading from a pipe.
func (w *writer) start() {
	pr, pw := io.Pipe()
	w.pw = pw
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		_, err := w.b.client.PutObject(w.ctx, w.b.cfg.Bucket, w.key, pr, -1, w.b.putOpts)
		pr.CloseWithError(err) // nil: further writes fail with io.ErrClosedPipe
		w.upErr = err
	}()
}

func (w *writer) Commit() error {
	if w.closed {
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	}
	err := w.commit()
	w.closed = true
	if err != nil {
		w.discard()
		return err
	}
	return nil
}

func (w *writer) commit() error {
	switch {
	case w.err != nil:
		return w.err
	case w.ctx.Err() != nil:
		return &storage.Error{Op: "commit", Name: w.name, Err: w.ctx.Err()}
	case w.b.closed.Load():
		return &storage.Error{Op: "commit", Name: w.name, Err: storage.ErrClosed}
	case w.pw == nil:
		head := w.head
		w.head = nil
		opts := w.b.putOpts
		if !w.b.cfg.DisableChecksum {
			// minio-go would send only the algorithm, not the CRC, if
			// left to itself (v7.4.1).
			crc := crc32.Checksum(head, castagnoli)
			opts.UserMetadata = map[string]string{
				"x-amz-checksum-crc32c": base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc)),
			}
		}
		if err := w.b.putSmall(w.ctx, w.key, head, opts); err != nil {
			return w.b.fail("commit", w.name, err)
		}
		return nil
	}
	w.pw.Close()
	<-w.done
	if w.upErr != nil {
		return w.b.fail("commit", w.name, w.upErr)
	}
	return nil
}

// Retries of a PUT that MinIO denied (see putSmall).
var deniedRetries = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}

// putSmall stores data under key in one PUT request. MinIO on a single
// drive answers a PUT with AccessDenied if a DELETE of another key in the
// same prefix removes the directory that the PUT is moving its data into
// (its renameAll retries once, without recreating the directory). So a
// denied PUT is tried again, twice; a real denial costs two more requests.
func (b *Backend) putSmall(ctx context.Context, key string, data []byte, opts minio.PutObjectOptions) error {
	for attempt := 0; ; attempt++ {
		_, err := b.client.PutObject(ctx, b.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)), opts)
		if err == nil || attempt == len(deniedRetries) || minio.ToErrorResponse(err).Code != "AccessDenied" {
			return err
		}
		select {
		case <-time.After(deniedRetries[attempt]):
		case <-ctx.Done():
			return err
		}
	}
}

func (w *writer) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.discard()
	return nil
}

// discard drops the head, or makes a running upload fail and waits until
// PutObject has aborted it.
func (w *writer) discard() {
	w.head = nil
	if w.pw != nil {
		w.pw.CloseWithError(errAborted)
		<-w.done
	}
}
