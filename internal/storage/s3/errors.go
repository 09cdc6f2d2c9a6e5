package s3

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/ckpt/ckpt/storage"
)

// ErrNoSuchBucket reports that the configured bucket does not exist. The
// error that wraps it names the bucket and the endpoint, and is permanent.
var ErrNoSuchBucket = errors.New("bucket does not exist")

// ErrAccessDenied reports that the server refused the credentials (unknown
// access key, wrong secret key) or denied the operation. It matches
// fs.ErrPermission too, so storage.IsPermanent is true for it.
var ErrAccessDenied error = accessDenied{}

type accessDenied struct{}

func (accessDenied) Error() string        { return "access denied" }
func (accessDenied) Is(target error) bool { return target == fs.ErrPermission }

// Error codes of S3 (and MinIO) answers, as minio.ErrorResponse.Code.
var (
	accessCodes = map[string]bool{
		"AccessDenied":             true,
		"InvalidAccessKeyId":       true,
		"SignatureDoesNotMatch":    true,
		"AllAccessDisabled":        true,
		"AccountProblem":           true,
		"InvalidToken":             true,
		"XMinioInvalidCredentials": true,
		"InvalidSecurity":          true,
	}
	// transientCodes are client errors (4xx) that another try may cure.
	transientCodes = map[string]bool{
		"RequestTimeout":       true,
		"RequestTimeTooSkewed": true,
		"ExpiredToken":         true,
		"SlowDown":             true,
		"Throttling":           true,
		"OperationAborted":     true,
		"IncompleteBody":       true,
		// A body corrupted in transit: its checksum does not match.
		"BadDigest":                   true,
		"XAmzContentChecksumMismatch": true,
		"XAmzContentSHA256Mismatch":   true,
	}
)

// cause translates an error of the minio client into what the Backend's
// methods wrap in a *storage.Error: storage.ErrNotExist for a missing key,
// ErrNoSuchBucket and ErrAccessDenied with the bucket and endpoint named, and
// the client's error otherwise, marked permanent where the server's answer
// says that another try cannot help. Network errors, server errors (5xx) and
// throttling stay transient.
func (b *Backend) cause(err error) error {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return err
	}
	switch {
	case resp.Code == "NoSuchKey":
		return storage.ErrNotExist
	case resp.Code == "NoSuchBucket":
		return storage.Permanent(fmt.Errorf("s3: bucket %q at %s: %w", b.cfg.Bucket, b.cfg.url(), ErrNoSuchBucket))
	case accessCodes[resp.Code]:
		return fmt.Errorf("s3: bucket %q at %s: %w (check the credentials and the bucket's policy): %w (%s)",
			b.cfg.Bucket, b.cfg.url(), ErrAccessDenied, err, resp.Code)
	case transientCodes[resp.Code]:
		return err
	}
	switch s := resp.StatusCode; {
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s == 499:
		return err
	case s >= 400 && s < 500, s == http.StatusNotImplemented, s == http.StatusInsufficientStorage:
		return storage.Permanent(err)
	}
	return err
}
