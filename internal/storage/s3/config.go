package s3

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// Defaults of the Config fields left zero.
const (
	DefaultPartSize    = 16 << 20
	DefaultConcurrency = 2
	DefaultConnections = 16
)

// Limits of S3's multipart uploads: every part but the last has at least
// MinPartSize bytes and at most MaxPartSize, and an upload has at most
// MaxParts parts, so an object has at most MaxParts × Config.PartSize bytes.
const (
	MinPartSize = 5 << 20
	MaxPartSize = 5 << 30
	MaxParts    = 10000
)

// MaxKeyLen is the longest key S3 accepts, in bytes. Prefix and name
// together must fit in it.
const MaxKeyLen = 1024

// Config says where a Backend stores its objects and how it talks to the
// server. Only Endpoint and Bucket are required.
type Config struct {
	// Endpoint is the server's host and optional port ("s3.amazonaws.com",
	// "127.0.0.1:9000"), or a URL with scheme "http" or "https"
	// ("http://127.0.0.1:9000"), whose scheme then overrides UseTLS.
	Endpoint string
	// UseTLS selects https for an Endpoint given without a scheme.
	UseTLS bool
	// Region is the bucket's region; if empty, the client asks the server
	// once per bucket.
	Region string

	// Bucket holds the objects; it must exist.
	Bucket string
	// Prefix is put in front of every object name to make its key; New
	// adds a trailing "/" to a non-empty Prefix that lacks one, so that the
	// objects of "s3://b/ckpt" are "ckpt/<name>".
	Prefix string

	// AccessKey and SecretKey are the credentials (both empty: anonymous
	// access), SessionToken the token of temporary credentials.
	AccessKey    string
	SecretKey    Secret
	SessionToken Secret

	// PartSize is the size of the parts of a multipart upload (default
	// DefaultPartSize, at least MinPartSize). An object of at most
	// PartSize bytes is sent in one request at Commit; a larger one
	// streams while it is written, in parts.
	PartSize int64
	// Concurrency is how many parts of one object are uploaded at once
	// (default DefaultConcurrency). Each Writer of a large object holds
	// Concurrency × PartSize bytes of buffers while it uploads.
	Concurrency int
	// Connections is what Properties reports: how many operations callers
	// should run at once (default DefaultConnections).
	Connections int
	// DisableChecksum sends uploads without a CRC32C, for servers that
	// do not support S3's additional checksums (x-amz-checksum-crc32c and
	// trailing headers). Only TCP's checksum (or TLS) then guards the bytes.
	DisableChecksum bool
	// MaxRetries is how many times the client tries a failed request
	// before it gives up (default 10, as in minio-go; 1: no retries). A
	// retried part costs one part, not the whole object.
	MaxRetries int
}

// Secret is a string that fmt, slog and text encoders do not reveal: it
// prints as "[redacted]" (or "" if empty). Convert it with string() where the
// value is needed.
type Secret string

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString is String for %#v.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// Format prints String for every verb, so that no verb reveals the secret.
func (s Secret) Format(f fmt.State, verb rune) { fmt.Fprint(f, s.String()) }

// LogValue redacts the secret in log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts the secret in encoders such as encoding/json.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// The environment variables ParseURL reads.
const (
	EnvEndpoint = "CKPT_S3_ENDPOINT"
)

// ParseURL returns the Config of the location "s3://BUCKET/PREFIX" (PREFIX
// may be empty), with the endpoint, credentials and region taken from the
// environment:
//
//   - Endpoint: $CKPT_S3_ENDPOINT, else $AWS_ENDPOINT_URL_S3, else
//     $AWS_ENDPOINT_URL, else https://s3.amazonaws.com. Give a URL
//     ("http://127.0.0.1:9000") to choose between http and https; a bare
//     host:port means https.
//   - Credentials: $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and
//     $AWS_SESSION_TOKEN if AWS_ACCESS_KEY_ID is set, else
//     $MINIO_ROOT_USER and $MINIO_ROOT_PASSWORD (a MinIO server's own
//     variables), else none (anonymous access).
//   - Region: $AWS_REGION, else $AWS_DEFAULT_REGION, else asked of the
//     server.
//
// The other fields keep their defaults; set them on the result.
func ParseURL(rawurl string) (Config, error) {
	return parseURL(rawurl, os.Getenv)
}

func parseURL(rawurl string, getenv func(string) string) (Config, error) {
	rest, ok := strings.CutPrefix(rawurl, "s3://")
	if !ok {
		return Config{}, fmt.Errorf("s3: %q is not an s3://BUCKET/PREFIX URL", rawurl)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Config{}, fmt.Errorf("s3: %q names no bucket", rawurl)
	}
	cfg := Config{Bucket: bucket, Prefix: prefix, UseTLS: true}
	cfg.Endpoint = firstSet(getenv, EnvEndpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if cfg.Endpoint == "" {
		cfg.Endpoint = "s3.amazonaws.com"
	}
	if id := getenv("AWS_ACCESS_KEY_ID"); id != "" {
		cfg.AccessKey = id
		cfg.SecretKey = Secret(getenv("AWS_SECRET_ACCESS_KEY"))
		cfg.SessionToken = Secret(getenv("AWS_SESSION_TOKEN"))
	} else {
		cfg.AccessKey = getenv("MINIO_ROOT_USER")
		cfg.SecretKey = Secret(getenv("MINIO_ROOT_PASSWORD"))
	}
	cfg.Region = firstSet(getenv, "AWS_REGION", "AWS_DEFAULT_REGION")
	if err := cfg.normalize(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func firstSet(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// normalize checks c, fills in defaults and splits a URL endpoint into host
// and UseTLS.
func (c *Config) normalize() error {
	if scheme, rest, ok := strings.Cut(c.Endpoint, "://"); ok {
		switch scheme {
		case "http":
			c.UseTLS = false
		case "https":
			c.UseTLS = true
		default:
			return fmt.Errorf("s3: endpoint %q: scheme is not http or https", c.Endpoint)
		}
		c.Endpoint = strings.TrimSuffix(rest, "/")
	}
	if c.Endpoint == "" {
		return errors.New("s3: no endpoint")
	}
	if strings.Contains(c.Endpoint, "/") {
		return fmt.Errorf("s3: endpoint %q: a path is not supported", c.Endpoint)
	}
	if err := s3utils.CheckValidBucketName(c.Bucket); err != nil {
		return fmt.Errorf("s3: bucket %q: %w", c.Bucket, err)
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.Prefix != "" {
		if len(c.Prefix) >= MaxKeyLen {
			return fmt.Errorf("s3: prefix of %d bytes leaves no room for names", len(c.Prefix))
		}
		if strings.HasPrefix(c.Prefix, "/") || strings.Contains(c.Prefix, "//") {
			return fmt.Errorf("s3: prefix %q: starts with / or has an empty element", c.Prefix)
		}
	}
	switch {
	case c.PartSize == 0:
		c.PartSize = DefaultPartSize
	case c.PartSize < MinPartSize || c.PartSize > MaxPartSize:
		return fmt.Errorf("s3: part size %d outside [%d, %d]", c.PartSize, MinPartSize, MaxPartSize)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Connections <= 0 {
		c.Connections = DefaultConnections
	}
	return nil
}

// url returns the endpoint with its scheme, for messages.
func (c *Config) url() string {
	if c.UseTLS {
		return "https://" + c.Endpoint
	}
	return "http://" + c.Endpoint
}
