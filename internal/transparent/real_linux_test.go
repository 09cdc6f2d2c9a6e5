//go:build linux

package transparent

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

	// The program waits at its gate after step 20. A checkpoint whose
	// freeze came before step 20 may commit after step 20 is printed, so
	// the test waits for a commit that recorded step 20 in its output:
	// one that provably froze the program at the gate.
	atGate := strings.Index(wantOut, "step 21 ")
	if atGate < 0 {
		t.Fatalf("no step 21 in the reference output:\n%s", wantOut)
	}
	runToGate(t, w, cfg, atGate)
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
	restartAfterLoss(t, w, cfg, gate, p.Stdout, "lost line\n")
	gotOut, _ := os.ReadFile(p.Stdout)
	gotErr, _ := os.ReadFile(p.Stderr)
	if string(gotOut) != wantOut || string(gotErr) != wantErr {
		t.Errorf("output after a restart:\n%s\nstderr:\n%s\nwant:\n%s\nstderr:\n%s", gotOut, gotErr, wantOut, wantErr)
	}
}

// runToGate runs the rank until a checkpoint has recorded the program's
// output up to atGate bytes (the program waits at its gate there), then
// ends the run, as a failure would.
func runToGate(t *testing.T, w *world, cfg Config, atGate int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		_, err := Run(ctx, fakeJob{w: w, rank: 0}, cfg)
		first <- err
	}()
	waitFor(t, "checkpoint at the gate", func() bool {
		m, ok := w.lastMeta(0)
		return ok && m.Stdout.Offset >= int64(atGate)
	})
	cancel()
	w.wake()
	testwait.Recv(t, first, "the first run's end")
}

// restartAfterLoss plays what the lost program did after the checkpoint
// (lost appended to the file path), opens the program's gate and runs the
// rank again: it must restore from the checkpoint and the program succeed.
func restartAfterLoss(t *testing.T, w *world, cfg Config, gate, path, lost string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(lost)
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
}

// crashingTool is the real CRIU but for its dump number crashAt, which it
// kills half-way: a FIFO stands where CRIU writes the tree's memory pages
// (pages-1.img), so that CRIU blocks opening it, mid-dump (the tree
// seized, part of its images written); once it does, the process that
// opened it, CRIU, is killed with SIGKILL, as a crash would.
type crashingTool struct {
	criu.CLI
	crashAt int
	mu      sync.Mutex
	dumps   int
	killed  chan int // the killed CRIU's pid (≤ 0: none was found)
}

func (c *crashingTool) Dump(ctx context.Context, req criu.DumpRequest) error {
	c.mu.Lock()
	c.dumps++
	n := c.dumps
	c.mu.Unlock()
	if n != c.crashAt {
		return c.CLI.Dump(ctx, req)
	}
	fifo := filepath.Join(req.Dir, "pages-1.img")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return err
	}
	go func() {
		// Blocks until CRIU opens the FIFO to write the pages.
		f, err := os.Open(fifo)
		if err != nil {
			c.killed <- -1
			return
		}
		defer f.Close()
		pid := openerOf(fifo)
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		c.killed <- pid
	}()
	err := c.CLI.Dump(ctx, req)
	// If CRIU never opened the FIFO, the reader above is still waiting:
	// a writer of our own lets it go (the test then fails on its pid).
	if w, werr := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); werr == nil {
		w.Close()
	}
	return err
}

// openerOf is the pid of the process (other than this one) that has path
// open, or 0.
func openerOf(path string) int {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == path {
				return pid
			}
		}
	}
	return 0
}

// TestRealCrashDuringDump kills CRIU in the middle of the second dump of
// a forking shell program (its first checkpoint committed): the
// checkpoint fails and nothing of it is stored (no file of a checkpoint
// whose dump did not end on every rank is committed), the half-written
// dump is removed, and the relaunched supervisor restores the
// first checkpoint, after which the program prints exactly its
// failure-free output. It runs with the checkpoints' files in memory
// (dumped into the scratch directory, then copied) and in a cache
// directory (CRIU dumps into the checkpoint's directory there: the half
// dump is removed from it, and the restore is from the cache in place).
func TestRealCrashDuringDump(t *testing.T) {
	path := criutest.Path(t)
	t.Run("scratch", func(t *testing.T) { crashDuringDump(t, path, false) })
	t.Run("in place", func(t *testing.T) { crashDuringDump(t, path, true) })
}

func crashDuringDump(t *testing.T, path string, inPlace bool) {
	wantOut, wantErr := reference(t, criutest.ForkingProgram)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	crash := &crashingTool{CLI: criu.CLI{Path: path}, crashAt: 2, killed: make(chan int, 1)}
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", criutest.ForkingProgram, "sh", gate},
		Stdout: filepath.Join(dir, "out", "rank-0.out"), Stderr: filepath.Join(dir, "out", "rank-0.err"), Tool: crash}
	scratch := filepath.Join(dir, "scratch")
	cfg := Config{Runner: p, Tool: crash, Scratch: scratch, Tick: 10 * time.Millisecond}
	// The gate stays closed: the program is alive at the second dump
	// however fast the first checkpoint came.
	w := newWorld(1, 50)
	if inPlace {
		w.dir = filepath.Join(dir, "cache")
	}
	_, err := Run(t.Context(), fakeJob{w: w, rank: 0}, cfg)
	if pid := testwait.Recv(t, crash.killed, "CRIU's kill"); pid <= 0 {
		t.Fatalf("CRIU never opened its pages image, or was not found: the crash did not happen (Run: %v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "criu dump") {
		t.Fatalf("Run: %v; want the checkpoint failed by CRIU's crash", err)
	}
	if n := w.committed(); n != 1 {
		t.Fatalf("%d checkpoints committed, want the first one only", n)
	}
	first := w.names[0]
	for name, ranks := range w.pending {
		if name == first {
			continue
		}
		if files := ranks[0]; len(files) != 0 {
			t.Errorf("the failed checkpoint %s has files %v: want none", name, slices.Collect(maps.Keys(files)))
		}
		if inPlace {
			if left, _ := os.ReadDir(w.partDir(name, 0)); len(left) != 0 {
				t.Errorf("the failed checkpoint's directory in the cache holds %v: want nothing", left)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(scratch, "dump-*")); len(left) != 0 {
		t.Errorf("the half-written dump is still in the scratch directory: %v", left)
	}

	// The relaunch, with the real CRIU.
	os.WriteFile(gate, nil, 0o600)
	w.seq, w.gathers = make([]int, 1), map[int][][]byte{}
	tool := criu.CLI{Path: path}
	p.Tool, cfg.Tool = tool, tool
	rep, err := Run(t.Context(), fakeJob{w: w, rank: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != first || rep.ExitCode != 0 {
		t.Errorf("report %+v: want %s restored and the program's success", rep, first)
	}
	if left, _ := filepath.Glob(filepath.Join(scratch, "*")); len(left) != 0 {
		t.Errorf("left in the scratch directory after the restore: %v", left)
	}
	gotOut, _ := os.ReadFile(p.Stdout)
	gotErr, _ := os.ReadFile(p.Stderr)
	if string(gotOut) != wantOut || string(gotErr) != wantErr {
		t.Errorf("output after the crash and a restart:\n%s\nstderr:\n%s\nwant:\n%s\nstderr:\n%s", gotOut, gotErr, wantOut, wantErr)
	}
}

// openFileProgram writes a line per step to a file it keeps open on
// descriptor 3 (opened with REDIR, "$2" its path) besides its stdout, and
// waits at its gate (the file "$1") after step 20 of its 30.
func openFileProgram(redir string) string {
	return `exec 3` + redir + `"$2"
i=0
while [ $i -lt 30 ]; do
  i=$((i+1))
  echo "line $i" >&3
  echo "step $i"
  if [ $i -eq 20 ]; then while [ ! -e "$1" ]; do sleep 0.01; done; fi
done
echo final`
}

// TestRealOpenFileAfterRestore: a program that writes to a file it keeps
// open (truncated at its start, ">", or appended to, ">>") is
// checkpointed at its gate, fails after the lost incarnation wrote more
// to the file, and is restored. CRIU alone refuses that restore (the
// file's size is not the one it dumped: "has bad size"); the supervisor
// recorded the file's size at the checkpoint and cuts it back before the
// restore, so the restored program writes its lines again where they
// belong: the file and the output are exactly the failure-free ones.
func TestRealOpenFileAfterRestore(t *testing.T) {
	path := criutest.Path(t)
	for _, redir := range []string{">", ">>"} {
		t.Run(redir, func(t *testing.T) {
			tool := criu.CLI{Path: path}
			script := openFileProgram(redir)
			dir := t.TempDir()
			// The failure-free run.
			open := filepath.Join(dir, "open")
			os.WriteFile(open, nil, 0o600)
			refData := filepath.Join(dir, "ref.txt")
			wantOut, err := exec.Command("/bin/sh", "-c", script, "sh", open, refData).Output()
			if err != nil {
				t.Fatal(err)
			}
			wantData, _ := os.ReadFile(refData)

			gate := filepath.Join(dir, "gate")
			data := filepath.Join(dir, "data.txt")
			p := &Processes{Program: "/bin/sh", Args: []string{"-c", script, "sh", gate, data},
				Stdout: filepath.Join(dir, "out", "rank-0.out"), Stderr: filepath.Join(dir, "out", "rank-0.err"), Tool: tool}
			cfg := Config{Runner: p, Tool: tool, Scratch: filepath.Join(dir, "scratch"), Tick: 10 * time.Millisecond}
			w := newWorld(1, 50)
			runToGate(t, w, cfg, strings.Index(string(wantOut), "step 21\n"))
			m, _ := w.lastMeta(0)
			atCheckpoint := int64(strings.Index(string(wantData), "line 21\n"))
			if len(m.Files) != 1 || m.Files[0].Path != data || m.Files[0].Size != atCheckpoint {
				t.Fatalf("the checkpoint recorded open files %+v; want %s at %d bytes", m.Files, data, atCheckpoint)
			}
			// What the lost program wrote to its file after the checkpoint.
			restartAfterLoss(t, w, cfg, gate, data, "line 21\nline 22 lost\n")
			gotData, _ := os.ReadFile(data)
			gotOut, _ := os.ReadFile(p.Stdout)
			if string(gotData) != string(wantData) || string(gotOut) != string(wantOut) {
				t.Errorf("after a restart, the file:\n%s\nstdout:\n%s\nwant:\n%s\nstdout:\n%s", gotData, gotOut, wantData, wantOut)
			}
		})
	}
}
