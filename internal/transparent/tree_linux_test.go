//go:build linux

package transparent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ckpt/ckpt/internal/criu/criutest"
	"github.com/ckpt/ckpt/internal/testwait"
)

// TestFreezeSyncThaw freezes a program that prints and forks without
// pause: once frozen, every process of its tree is stopped and its output
// file holds exactly what Sync says; thawed, it finishes with all of its
// output, nothing lost or doubled by the pause.
func TestFreezeSyncThaw(t *testing.T) {
	criutest.Root(t, "the program's PID namespace needs root")
	script := `i=0; while [ $i -lt 300 ]; do echo "line $i $(echo x)"; i=$((i+1)); done; echo done >&2`
	var want strings.Builder
	for i := range 300 {
		want.WriteString("line " + strconv.Itoa(i) + " x\n")
	}
	dir := t.TempDir()
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", script},
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err")}
	tr, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Kill()
	frozen := 0
	for frozen < 3 {
		if err := tr.Freeze(t.Context()); err != nil {
			if err == ErrExited {
				break // a fast machine: it ended first
			}
			t.Fatal(err)
		}
		out, _, err := tr.Sync()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p.Stdout)
		if int64(len(b)) != out.Offset || out.Pipe == 0 {
			t.Fatalf("frozen: file of %d bytes, Sync said %+v", len(b), out)
		}
		for _, pid := range descendants(tr.Pid()) {
			if st, ok := procState(pid); ok && st != 'T' && st != 'Z' {
				t.Fatalf("frozen, process %d is in state %c", pid, st)
			}
		}
		if err := tr.Thaw(); err != nil {
			t.Fatal(err)
		}
		frozen++
		time.Sleep(10 * time.Millisecond) // let it print more between freezes: no correctness depends on it
	}
	testwait.Recv(t, tr.Done(), "the program's end")
	if tr.ExitCode() != 0 {
		t.Fatalf("exit %d", tr.ExitCode())
	}
	got, _ := os.ReadFile(p.Stdout)
	gotErr, _ := os.ReadFile(p.Stderr)
	if string(got) != want.String() || string(gotErr) != "done\n" {
		t.Errorf("output %d bytes (want %d), stderr %q", len(got), want.Len(), gotErr)
	}
}

// TestFreezeVforkingProgram freezes, again and again, a shell that runs an
// external command in a loop: the shell starts each with vfork, and waits
// in the kernel, unstoppable, until the child has exec'd. A freeze that
// stopped such a child before its exec would wait forever for its parent;
// every freeze must instead end with the whole tree stopped.
func TestFreezeVforkingProgram(t *testing.T) {
	criutest.Root(t, "the program's PID namespace needs root")
	dir := t.TempDir()
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", "while :; do /bin/true; done"},
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err")}
	tr, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Kill()
	// The deadline only bounds the hang this test is about.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for i := range 200 {
		if err := tr.Freeze(ctx); err != nil {
			t.Fatalf("freeze %d: %v", i, err)
		}
		for _, pid := range descendants(tr.Pid()) {
			if st, ok := procState(pid); ok && st != 'T' && st != 'Z' {
				t.Fatalf("freeze %d: process %d is in state %c", i, pid, st)
			}
		}
		if err := tr.Thaw(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenFiles: the files a frozen tree's processes have open for
// writing (a child's too), each once with its size, and only those: not a
// file open read-only, not the output pipes, not /dev/null.
func TestOpenFiles(t *testing.T) {
	criutest.Root(t, "the program's PID namespace needs root")
	dir := t.TempDir()
	w1, w2, ro, ready := filepath.Join(dir, "w1"), filepath.Join(dir, "w2"), filepath.Join(dir, "ro"), filepath.Join(dir, "ready")
	os.WriteFile(ro, []byte("read only"), 0o600)
	// The shell writes w1 (appending) and reads ro; its child writes w2;
	// both wait, their files open, once ready exists.
	script := `exec 3>>"$1" 4<"$3"; echo abc >&3
(exec 5>"$2"; echo hello >&5; touch "$4"; while :; do sleep 1; done) &
while :; do sleep 1; done`
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", script, "sh", w1, w2, ro, ready},
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err")}
	tr, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Kill()
	deadline := time.Now().Add(testwait.Bound)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program never got ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tr.Freeze(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer tr.Thaw()
	got, err := tr.(*tree).OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := []OpenFile{{Path: w1, Size: 4}, {Path: w2, Size: 6}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("open files %+v, want %+v", got, want)
	}
}

// TestProgramInheritsNoDescriptor: a descriptor the supervisor inherited
// (here: opened without close-on-exec, as a launcher's would be) is not
// passed on to the program, whose tree CRIU dumps.
func TestProgramInheritsNoDescriptor(t *testing.T) {
	criutest.Root(t, "the program's PID namespace needs root")
	devnull, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(devnull)
	// A number of its own, above what ls opens.
	const fd = 77
	if err := unix.Dup2(devnull, fd); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dir := t.TempDir()
	p := &Processes{Program: "/bin/sh", Args: []string{"-c", "ls /proc/self/fd"},
		Stdout: filepath.Join(dir, "out"), Stderr: filepath.Join(dir, "err")}
	tr, err := p.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Kill()
	testwait.Recv(t, tr.Done(), "the program's end")
	b, _ := os.ReadFile(p.Stdout)
	fds := strings.Fields(string(b))
	if len(fds) == 0 || slices.Contains(fds, strconv.Itoa(fd)) {
		t.Errorf("the program's descriptors %q: want 0 1 2 (and its own), not the inherited %d", fds, fd)
	}
}
