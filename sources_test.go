package ckpt

import (
	"testing"

	"github.com/ckpt/ckpt/internal/engine"
)

// Restored.Source and the operator tools' verdicts carry the engine's
// values; applications compare them with these constants.
func TestSourcesAreTheEngines(t *testing.T) {
	for _, c := range [][2]string{
		{SourceCache, string(engine.SourceCache)},
		{SourceRebuild, string(engine.SourceRebuild)},
		{SourceShared, string(engine.SourceShared)},
	} {
		if c[0] != c[1] {
			t.Errorf("root %q, engine %q", c[0], c[1])
		}
	}
}
