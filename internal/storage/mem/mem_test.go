package mem_test

import (
	"testing"

	"github.com/ckpt/ckpt/internal/storage/mem"
	"github.com/ckpt/ckpt/storage"
	"github.com/ckpt/ckpt/storage/storagetest"
)

func TestBackend(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		return mem.New()
	})
}
