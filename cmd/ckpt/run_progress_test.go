package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunReportsCheckpointsWithoutVerbose: without -v, ckpt run printed
// nothing between the launch and the end; every checkpoint committed is
// now one progress line as it happens, before "finished".
func TestRunReportsCheckpointsWithoutVerbose(t *testing.T) {
	spec, log := jobSpec(t)
	if spec.verbose {
		t.Fatal("jobSpec is verbose: the test must run without -v")
	}
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := spec.launch(ctx, cfg, coords); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	text := log.String()
	line := regexp.MustCompile(`(?m)^ +\d+\.\d\ds  checkpoint (\S+) committed$`)
	commits := line.FindAllStringIndex(text, -1)
	// 200 iterations checkpointed every 5 steps.
	if len(commits) < 2 {
		t.Fatalf("%d checkpoint lines without -v, want one per checkpoint:\n%s", len(commits), text)
	}
	fin := strings.Index(text, "finished")
	if fin < 0 || commits[len(commits)-1][0] > fin {
		t.Errorf("checkpoint lines not all before \"finished\":\n%s", text)
	}
}
