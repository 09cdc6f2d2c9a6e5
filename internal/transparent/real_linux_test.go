//go:build linux

package transparent

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/criu/criutest"
	"github.com/ckpt/ckpt/internal/testwait"
)

// reference is the program's output without checkpoints.
func reference(t *testing.T, script string) (string, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	os.WriteFile(gate, nil, 0o600)
	var out, errb bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", script, "sh", gate)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String()
}

// waitFor polls cond, with a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRealCheckpointRestart runs a forking shell program under a
// supervisor of one rank with a real CRIU, checkpoints it while it waits
// half-way, kills it (a failure), appends to its output what a lost
// process printed after the checkpoint, and restarts it: the restored
// program finishes with the failure-free output, byte for byte.
func TestRealCheckpointRestart(t *testing.T) {
	tool := criu.CLI{Path: criutest.Path(t)}
	wantOut, wantErr := reference(t, criutest.ForkingProgram)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", criutest.ForkingProgram, "sh", gate},
		Stdout: filepath.Join(dir, "out", "rank-0.out"), Stderr: filepath.Join(dir, "out", "rank-0.err"), Tool: tool}
	cfg := Config{Runner: p, Tool: tool, Scratch: filepath.Join(dir, "scratch"), Tick: 10 * time.Millisecond}
	w := newWorld(1, 5)

	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := Run(ctx, fakeJob{w: w, rank: 0}, cfg)
		first <- err
	}()
	waitFor(t, "step 20", func() bool {
		b, _ := os.ReadFile(p.Stdout)
		return strings.Contains(string(b), "step 20 ")
	})
	n := w.committed()
	waitFor(t, "checkpoint at the gate", func() bool { return w.committed() > n })
	cancel()
	w.wake()
	testwait.Recv(t, first, "the first run's end")
	m, err := readMeta(memRestored{files: w.commits[len(w.commits)-1][0]})
	if err != nil {
		t.Fatal(err)
	}
	if m.Exited || len(m.Images) == 0 || !strings.Contains(wantOut[:m.Stdout.Offset], "step 20 ") {
		t.Fatalf("checkpoint %+v: want the running program's images, its output up to step 20", m)
	}
	// What the lost program printed after the checkpoint: the restart
	// must cut it.
	f, err := os.OpenFile(p.Stdout, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("lost line\n")
	f.Close()

	os.WriteFile(gate, nil, 0o600)
	w.seq, w.gathers = make([]int, 1), map[int][][]byte{}
	rep, err := Run(t.Context(), fakeJob{w: w, rank: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored == "" || rep.ExitCode != 0 {
		t.Errorf("report %+v: want a restore and the program's success", rep)
	}
	gotOut, _ := os.ReadFile(p.Stdout)
	gotErr, _ := os.ReadFile(p.Stderr)
	if string(gotOut) != wantOut || string(gotErr) != wantErr {
		t.Errorf("output after a restart:\n%s\nstderr:\n%s\nwant:\n%s\nstderr:\n%s", gotOut, gotErr, wantOut, wantErr)
	}
}
