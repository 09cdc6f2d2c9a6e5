package launch

import (
	"slices"
	"testing"
)

// salloc is asked for the nodes without a shell, whole nodes, kept on a
// node's failure, under the job's name, with the --launcher-args options
// that shape an allocation (in their forms) and none other.
func TestSallocArgs(t *testing.T) {
	got := SallocArgs(3, "ckpt-ab", []string{"-p", "debug", "--account=proj", "-t", "10", "--kill-on-bad-exit=0",
		"-qlow", "--reservation", "r1", "--mpi=pmix", "-C", "ib", "--time"})
	want := []string{"--no-shell", "--no-kill", "--exclusive", "--nodes=3", "--job-name=ckpt-ab",
		"-p", "debug", "--account=proj", "-t", "10", "-qlow", "--reservation", "r1", "-C", "ib"}
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
