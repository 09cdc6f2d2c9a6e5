package main

import (
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/internal/launch"
)

// failDetail adds to a failure's progress line its first real cause, when
// the symptom hides it, and the wait before the relaunch.
func failDetail(e launch.Event) string {
	s := ""
	// The cause is told once: the reason of an injected failure already
	// starts with it ("injected failure: node 1 lost ... (seen as: ...)").
	if e.Cause != "" && !strings.HasPrefix(e.Reason, e.Cause) {
		s += "; cause: " + e.Cause
	}
	switch {
	case e.Backoff > 0:
		s += fmt.Sprintf("; relaunching in %s", sec(e.Backoff.Seconds()))
	case e.Class == launch.ClassConfig || e.Class == launch.ClassApplication:
		s += "; not relaunched"
	}
	return s
}
