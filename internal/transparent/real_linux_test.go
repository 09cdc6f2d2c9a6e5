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

// waitFor polls cond, with a deadline that only bounds a hang: beside a
// CPU hog each CRIU dump takes seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const limit = 5 * time.Minute
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, limit)
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
	// A checkpoint every 50 ticks (half a second of the program's run at
	// least): the program progresses between dumps however slow they are.
	w := newWorld(1, 50)

	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := Run(ctx, fakeJob{w: w, rank: 0}, cfg)
		first <- err
	}()
	// The program waits at its gate after step 20. A checkpoint whose
	// freeze came before step 20 may commit after step 20 is printed, so
	// the test waits for a commit that recorded step 20 in its output:
	// one that provably froze the program at the gate.
	atGate := strings.Index(wantOut, "step 21 ")
	if atGate < 0 {
		t.Fatalf("no step 21 in the reference output:\n%s", wantOut)
	}
	waitFor(t, "checkpoint at the gate", func() bool {
		m, ok := w.lastMeta(0)
		return ok && m.Stdout.Offset >= int64(atGate)
	})
	cancel()
	w.wake()
	testwait.Recv(t, first, "the first run's end")
	m, err := readMeta(memRestored{files: w.commits[len(w.commits)-1][0]})
	if err != nil {
		t.Fatal(err)
	}
	// Stopped at the gate, the program had printed exactly its first 20
	// steps: not one byte of step 21.
	if m.Exited || len(m.Images) == 0 || m.Stdout.Offset != int64(atGate) {
		t.Fatalf("checkpoint %+v: want the running program's images, its output up to step 20 (%d bytes)", m, atGate)
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
