package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
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

// TestRunProgressScratchWhy: a relaunch that starts from scratch says why:
// nothing was committed yet, or what was committed could not be recovered.
func TestRunProgressScratchWhy(t *testing.T) {
	var log syncWriter
	log.b = new(bytes.Buffer)
	spec := runSpec{ranks: 2, nodes: 2, program: "prog", cacheRoot: t.TempDir(), progress: &log, output: &log}
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Event(launch.Event{Kind: "restored", Incarnation: 0, Source: "none"})
	cfg.Event(launch.Event{Kind: "restored", Incarnation: 1, Source: "none"})
	coords.OnCommit(1, "c1")
	cfg.Event(launch.Event{Kind: "restored", Incarnation: 2, Source: "none"})
	lines := strings.Split(strings.TrimSpace(log.b.String()), "\n")
	want := []string{"started from scratch", "started from scratch: no checkpoint committed yet", "checkpoint c1 committed",
		"started from scratch: no checkpoint recoverable"}
	if len(lines) != len(want) {
		t.Fatalf("progress:\n%s\nwant %d lines", log.b.String(), len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], "  "+w) {
			t.Errorf("line %d: %q, want it to end in %q", i+1, lines[i], w)
		}
	}
}
