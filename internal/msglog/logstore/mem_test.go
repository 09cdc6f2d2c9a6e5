package logstore_test

import (
	"testing"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/msglog/logstore/logstoretest"
)

func TestMemConformance(t *testing.T) {
	logstoretest.Run(t, func(t *testing.T) logstoretest.Opener {
		m := logstore.NewMem()
		return func() (logstore.Store, error) { return m, nil }
	})
}
