package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// salloc is asked for the nodes without a shell, whole nodes, kept on a
// node's failure, under the job's name, with the --launcher-args options
// that shape an allocation (in their forms) and none other: the nodes a
// step must or must not run on too, or no step could run on the nodes
// the user named.
func TestSallocArgs(t *testing.T) {
	got := SallocArgs(3, "ckpt-ab", []string{"-p", "debug", "--account=proj", "-t", "10", "--kill-on-bad-exit=0",
		"-qlow", "--reservation", "r1", "--mpi=pmix", "-C", "ib", "-w", "n[1-3]", "--exclude=n9", "-xn8", "--time"})
	want := []string{"--no-shell", "--no-kill", "--exclusive", "--nodes=3", "--job-name=ckpt-ab",
		"-p", "debug", "--account=proj", "-t", "10", "-qlow", "--reservation", "r1", "-C", "ib", "-w", "n[1-3]", "--exclude=n9", "-xn8"}
	if !slices.Equal(got, want) {
		t.Errorf("SallocArgs:\n got %q\nwant %q", got, want)
	}
}

func TestSallocJobID(t *testing.T) {
	for out, want := range map[string]string{
		"salloc: Granted job allocation 42\n": "42",
		"salloc: Pending job allocation 7\nsalloc: job 7 queued and waiting for resources\nsalloc: job 7 has been allocated resources\nsalloc: Granted job allocation 7\n": "7",
		"salloc: error: Job submit/allocate failed: Invalid partition name specified\n":                                                                                    "",
	} {
		if got := SallocJobID(out); got != want {
			t.Errorf("SallocJobID(%q) = %q, want %q", out, got, want)
		}
	}
}

// A held allocation's srun is a step of it (--jobid first); without one
// srun gets no --jobid.
func TestHeldAllocationStep(t *testing.T) {
	e := &External{Kind: LauncherSrun}
	if cmd := e.Command(4, 2, nil, "app", nil); slices.ContainsFunc(cmd, func(a string) bool { return a == "--jobid=9" }) {
		t.Errorf("no allocation held, yet %q", cmd)
	}
	e.JobID = "9"
	if cmd := e.Command(4, 2, nil, "app", nil); cmd[0] != "--jobid=9" {
		t.Errorf("allocation 9 held: %q, want --jobid=9 first", cmd)
	}
}

// Hold holds nothing for mpirun, inside an allocation, or with the
// user's own --jobid: the launcher is returned as it is.
func TestHoldNothing(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "")
	for _, e := range []*External{
		{Kind: LauncherMPIRun, Flavor: OpenMPI},
		{Kind: LauncherSrun, Args: []string{"--jobid=5"}},
		{Kind: LauncherSrun, JobID: "6"},
	} {
		l, release, err := e.Hold(t.Context(), nil, 2, func(string) {})
		if err != nil || l != Launcher(e) {
			t.Errorf("%+v: %v, %v: want itself", e, l, err)
		}
		release()
	}
	t.Setenv("SLURM_JOB_ID", "8")
	e := &External{Kind: LauncherSrun}
	if l, _, err := e.Hold(t.Context(), nil, 2, func(string) {}); err != nil || l != Launcher(e) {
		t.Errorf("inside allocation 8: %v, %v: want itself", l, err)
	}
}

// fakeSalloc puts on PATH a salloc that says its request (job 42) is
// pending and waits, giving it up on SIGINT as Slurm's does, and a
// scancel that appends its arguments to the returned log. started is
// created once salloc has said its request is pending.
func fakeSalloc(t *testing.T) (log, started string) {
	t.Helper()
	dir := t.TempDir()
	log, started = filepath.Join(dir, "scancel.log"), filepath.Join(dir, "started")
	salloc := `#!/bin/sh
trap 'echo "salloc: Job allocation 42 has been revoked." >&2; exit 1' INT
echo "salloc: Pending job allocation 42" >&2
echo "salloc: job 42 queued and waiting for resources" >&2
: > ` + started + `
while :; do sleep 0.05; done
`
	scancel := "#!/bin/sh\necho \"$@\" >> " + log + "\n"
	for name, text := range map[string]string{"salloc": salloc, "scancel": scancel} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_ID", "")
	return log, started
}

// A stop (ckpt run's first signal) while salloc's request is pending
// gives the request up and cancels it by the id salloc said: nothing is
// left queued, to be granted to nobody.
func TestHoldStoppedWhilePending(t *testing.T) {
	log, started := fakeSalloc(t)
	stop := make(chan struct{})
	go func() {
		// Poll for the fake's file (no deadline: Hold's end ends it).
		for t.Context().Err() == nil {
			if _, err := os.Stat(started); err == nil {
				close(stop)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	e := &External{Kind: LauncherSrun}
	l, release, err := e.Hold(t.Context(), stop, 2, func(string) {})
	if err == nil || l != nil || release != nil {
		t.Fatalf("Hold stopped while pending: %v, %v: want an error", l, err)
	}
	if !strings.Contains(err.Error(), "stopped while waiting") {
		t.Errorf("error %v: want it to say it was stopped", err)
	}
	got, _ := os.ReadFile(log)
	if string(got) != "42\n" {
		t.Errorf("scancel's calls %q, want the pending job 42 cancelled", got)
	}
}

// A stop that came before Hold (a signal before the job started) asks
// Slurm for nothing: no salloc request that a SIGINT would have to
// give up before salloc could listen for it.
func TestHoldStoppedBefore(t *testing.T) {
	log, started := fakeSalloc(t)
	stop := make(chan struct{})
	close(stop)
	e := &External{Kind: LauncherSrun}
	if _, _, err := e.Hold(t.Context(), stop, 2, func(string) {}); err == nil {
		t.Fatal("Hold after a stop: no error")
	}
	if _, err := os.Stat(started); err == nil {
		t.Errorf("salloc ran after the stop")
	}
	if got, _ := os.ReadFile(log); len(got) != 0 {
		t.Errorf("scancel's calls %q, want none: nothing was asked for", got)
	}
}
