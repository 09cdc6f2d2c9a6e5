package s3_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/storage"
)

// TestUploadHashing checks, through a proxy in front of the server, that
// uploads carry no SHA-256 of the body (neither the streaming signature,
// minio-go's default over http, nor a whole-body one) and no MD5, but a
// CRC32C, in a header or a trailer, for single PUTs and parts alike.
func TestUploadHashing(t *testing.T) {
	s := server(t)
	target, _ := url.Parse("http://" + s.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var puts []http.Header
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			h := r.Header.Clone()
			h.Set("X-Test-Query", r.URL.RawQuery)
			mu.Lock()
			puts = append(puts, h)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r) // the Host header stays the proxy's, as signed
	}))
	defer front.Close()

	b := newBackend(t, s, func(c *s3.Config) {
		c.Endpoint = front.URL
		c.PartSize = s3.MinPartSize
	})
	save(t, b, "small", []byte("a small object"))
	save(t, b, "large", randomBytes(2*s3.MinPartSize+1))
	if got, err := storage.Load(t.Context(), b, "large"); err != nil || len(got) != 2*s3.MinPartSize+1 {
		t.Fatalf("Load(large) = %d bytes, %v", len(got), err)
	}

	parts := 0
	for _, h := range puts {
		what := "PUT ?" + h.Get("X-Test-Query")
		if strings.Contains(what, "partNumber=") {
			parts++
		}
		if sha := h.Get("X-Amz-Content-Sha256"); !strings.Contains(sha, "UNSIGNED-PAYLOAD") {
			t.Errorf("%s: X-Amz-Content-Sha256 %q, want an unsigned payload", what, sha)
		}
		if md5 := h.Get("Content-Md5"); md5 != "" {
			t.Errorf("%s: Content-Md5 %q, want none", what, md5)
		}
		crc := h.Get("X-Amz-Checksum-Crc32c") != "" || strings.EqualFold(h.Get("X-Amz-Trailer"), "x-amz-checksum-crc32c")
		if !crc {
			t.Errorf("%s: no CRC32C (headers %v)", what, h)
		}
		t.Logf("%s: sha256 %q, crc32c %q, trailer %q", what, h.Get("X-Amz-Content-Sha256"),
			h.Get("X-Amz-Checksum-Crc32c"), h.Get("X-Amz-Trailer"))
	}
	if len(puts) != 4 || parts != 3 {
		t.Errorf("%d PUT requests with %d parts; want the single PUT and 3 parts", len(puts), parts)
	}
}

// TestCorruptUpload flips a byte of the first upload's body in transit: the
// server must reject the object (the CRC32C does not match), with an error
// that another try may cure, and store nothing.
func TestCorruptUpload(t *testing.T) {
	s := server(t)
	target, _ := url.Parse("http://" + s.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	corrupt := true
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Method == http.MethodPut && r.ContentLength > 100 && corrupt {
			corrupt = false
			r.Body = &flipReader{r: r.Body, at: 50}
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	b := newBackend(t, s, func(c *s3.Config) {
		c.Endpoint = front.URL
		c.PartSize = s3.MinPartSize
		c.MaxRetries = 1
	})
	for _, size := range []int{1000, 2*s3.MinPartSize + 1} {
		mu.Lock()
		corrupt = true
		mu.Unlock()
		_, err := storage.Save(t.Context(), b, "obj", strings.NewReader(string(randomBytes(size))))
		if err == nil {
			t.Errorf("%d bytes corrupted in transit: Save succeeded", size)
			continue
		}
		if storage.IsPermanent(err) {
			t.Errorf("%d bytes: IsPermanent(%v) = true, want a transient error", size, err)
		}
		if _, err := b.Stat(t.Context(), "obj"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("%d bytes: Stat after a rejected upload = %v, want ErrNotExist", size, err)
		}
		t.Logf("%d bytes: %v", size, err)
	}
	if ups := incompleteUploads(t, s, b.Config().Bucket); len(ups) != 0 {
		t.Errorf("incomplete uploads after rejected parts: %q", ups)
	}
}

// flipReader flips the bits of byte number at of r.
type flipReader struct {
	r   io.ReadCloser
	at  int
	off int
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if i := f.at - f.off; i >= 0 && i < n {
		p[i] ^= 0xff
	}
	f.off += n
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }
