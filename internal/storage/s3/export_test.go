package s3

import (
	"context"

	"github.com/minio/minio-go/v7"
)

// NewTweaked is New with a function that changes the client's options and
// the upload options, so that benchmarks can measure minio-go's defaults.
func NewTweaked(ctx context.Context, cfg Config, tweak func(*minio.Options, *minio.PutObjectOptions)) (*Backend, error) {
	return newBackend(ctx, cfg, tweak)
}
