package launch

import (
	"strings"
	"syscall"
	"testing"
)

func TestExternalCommand(t *testing.T) {
	names := []string{"CKPT_COORD", "CKPT_TOKEN"}
	for _, c := range []struct {
		e    External
		want string
	}{
		{External{Kind: LauncherMPIRun, Flavor: OpenMPI, Root: true, Args: []string{"--bind-to", "none"}},
			"-np 3 --oversubscribe --allow-run-as-root -x CKPT_COORD -x CKPT_TOKEN --bind-to none prog a b"},
		{External{Kind: LauncherMPIRun, Flavor: OpenMPI},
			"-np 3 --oversubscribe -x CKPT_COORD -x CKPT_TOKEN prog a b"},
		{External{Kind: LauncherMPIRun, Flavor: Hydra, Root: true},
			"-np 3 -genvlist CKPT_COORD,CKPT_TOKEN prog a b"},
		{External{Kind: LauncherSrun, Args: []string{"--mpi=pmix"}},
			"-n 3 --kill-on-bad-exit=1 --export=ALL,CKPT_COORD,CKPT_TOKEN --mpi=pmix prog a b"},
	} {
		if got := strings.Join(c.e.Command(3, names, "prog", []string{"a", "b"}), " "); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.e.Kind, c.e.Flavor, got, c.want)
		}
	}
}

func TestMPIFlavor(t *testing.T) {
	for v, want := range map[string]string{
		"mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/": OpenMPI,
		"HYDRA build details:\n    Version:                                 4.0.2":          Hydra,
		"Intel(R) MPI Library for Linux* OS, Version 2021.6":                                "",
	} {
		if got := MPIFlavor(v); got != want {
			t.Errorf("MPIFlavor(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestNewLauncherErrors(t *testing.T) {
	for _, c := range []struct{ name, args, mention string }{
		{"pbs", "", `--launcher "pbs"`},
		{"local", "-v", "--launcher-args"},
		{"mpirun", "'open", "--launcher-args"},
	} {
		if _, err := NewLauncher(c.name, c.args); err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("NewLauncher(%q, %q): %v, want an error naming %s", c.name, c.args, err, c.mention)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := NewLauncher("srun", ""); err == nil || !strings.Contains(err.Error(), "srun is not on PATH") {
		t.Errorf("srun missing: %v", err)
	}
	if l, err := NewLauncher("local", ""); err != nil || l.Name() != "local" {
		t.Errorf("local: %v, %v", l, err)
	}
}

// The end of mpirun or srun is classified as a rank's would be: it
// reports the first failed rank's status, or its signal.
func TestClassifyLauncherEnd(t *testing.T) {
	launcher := func(status int, sig syscall.Signal) Seen {
		return Seen{Exits: []RankExit{{Rank: -1, Launcher: "mpirun", Status: status, Signal: sig, Last: "boom"}},
			Symptom: "mpirun: exit status", Checkpointed: true}
	}
	for _, c := range []struct {
		seen     Seen
		class    string
		relaunch bool
	}{
		{launcher(-1, syscall.SIGKILL), ClassFailure, true}, // a rank killed from outside
		{launcher(ExitConfig, 0), ClassConfig, false},
		{launcher(ExitJobFailed, 0), ClassFailure, true},
		{launcher(1, 0), ClassApplication, true},
	} {
		v := Classify(c.seen)
		if v.Class != c.class || v.Relaunch != c.relaunch {
			t.Errorf("%+v: %+v, want class %q relaunch %v", c.seen.Exits[0], v, c.class, c.relaunch)
		}
		if c.class != ClassFailure && !strings.HasPrefix(v.Cause, "mpirun (all ranks)") {
			t.Errorf("cause %q does not name mpirun", v.Cause)
		}
	}
}
