package launch

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/internal/jobenv"
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
		if got := strings.Join(c.e.Command(3, 0, names, "prog", []string{"a", "b"}), " "); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.e.Kind, c.e.Flavor, got, c.want)
		}
	}
}

// Under srun each of the job's nodes is a Slurm node: --nodes, with
// --ntasks-per-node where the ranks divide evenly.
func TestExternalSrunNodes(t *testing.T) {
	srun := External{Kind: LauncherSrun, Args: []string{"--nodes=1"}}
	for _, c := range []struct {
		ranks, nodes int
		want         string
	}{
		{4, 2, "-n 4 --kill-on-bad-exit=1 --export=ALL --nodes=2 --distribution=block --ntasks-per-node=2 --nodes=1 prog"},
		{5, 2, "-n 5 --kill-on-bad-exit=1 --export=ALL --nodes=2 --distribution=block --nodes=1 prog"},
		{5, 0, "-n 5 --kill-on-bad-exit=1 --export=ALL --nodes=1 prog"},
	} {
		if got := strings.Join(srun.Command(c.ranks, c.nodes, nil, "prog", nil), " "); got != c.want {
			t.Errorf("%d ranks on %d nodes: %q, want %q", c.ranks, c.nodes, got, c.want)
		}
	}
	mpirun := External{Kind: LauncherMPIRun, Flavor: OpenMPI}
	if got := strings.Join(mpirun.Command(4, 2, nil, "prog", nil), " "); got != "-np 4 --oversubscribe prog" {
		t.Errorf("mpirun: %q: the node count is srun's only", got)
	}
	for _, c := range []struct {
		nodes []string
		ranks int
		want  int
	}{
		{[]string{"node0", "node1"}, 4, 2},
		{[]string{"node0", "node0", "node2", "node2"}, 4, 0}, // per rank, after a shrink
		{[]string{"node0", "node1", "node2", "node3"}, 4, 4},
		{nil, 4, 0},
	} {
		if got := blockNodes(c.nodes, c.ranks); got != c.want {
			t.Errorf("blockNodes(%v, %d) = %d, want %d", c.nodes, c.ranks, got, c.want)
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

// Inside a Slurm batch script SLURM_PROCID=0 is set: every rank of an
// mpirun would take it for its rank (jobenv tries Slurm's first).
func TestExternalEnvironDropsOtherLaunchersRanks(t *testing.T) {
	env := []string{"PATH=/bin", "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_JOBID=7", "OMPI_COMM_WORLD_RANK=3", "PMI_RANK=2"}
	for kind, want := range map[string]string{
		LauncherMPIRun: "PATH=/bin SLURM_JOBID=7 OMPI_COMM_WORLD_RANK=3 PMI_RANK=2",
		LauncherSrun:   "PATH=/bin SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOBID=7",
	} {
		e := External{Kind: kind}
		if got := strings.Join(e.environ(env), " "); got != want {
			t.Errorf("%s: %s, want %s", kind, got, want)
		}
	}
}

// A rank is found by the host and pid it published: not yet joined, it
// cannot be killed yet; on another host, it cannot be killed at all.
func TestExternalFindsRanks(t *testing.T) {
	published := map[string]string{jobenv.KeyProc(1): "elsewhere.example 4242", jobenv.KeyProc(2): "garbage"}
	x := &externalRanks{host: "here", lookup: func(k string) ([]byte, bool) {
		v, ok := published[k]
		return []byte(v), ok
	}}
	if err := x.Kill(0); !errors.Is(err, ErrNotJoined) {
		t.Errorf("a rank that published nothing: %v, want ErrNotJoined", err)
	}
	if err := x.Kill(1); err == nil || errors.Is(err, ErrNotJoined) || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Errorf("a rank on another host: %v, want an error naming the host", err)
	}
	if err := x.Stop(2); err == nil || errors.Is(err, ErrNotJoined) {
		t.Errorf("a rank whose process does not decode: %v", err)
	}
}

// srun's spare hosts: inside an allocation its nodes, from
// SLURM_JOB_NODELIST or, without it, squeue; outside one the cluster's
// responding nodes (sinfo); each expanded by scontrol. mpirun has none.
func TestExternalSpareHosts(t *testing.T) {
	var calls []string
	fake := func(name string, args ...string) ([]byte, error) {
		calls = append(calls, name+" "+strings.Join(args, " "))
		switch name {
		case "squeue":
			return []byte("n[1-3]\n"), nil
		case "sinfo":
			return []byte("n1 test*\nn2 test*\nn2 big\nn4 test*\nn5 big\n"), nil
		case "scontrol":
			var out []string
			for _, l := range strings.Split(args[2], ",") {
				if l == "n[1-3]" {
					out = append(out, "n1", "n2", "n3")
				} else {
					out = append(out, l)
				}
			}
			return []byte(strings.Join(out, "\n") + "\n"), nil
		}
		return nil, errors.New("no such program")
	}
	e := &External{Kind: LauncherSrun, Output: fake}
	for _, tc := range []struct {
		id, list, part string
		want           []string
		calls          string
	}{
		{"7", "n[1-3]", "", []string{"n1", "n2", "n3"}, "scontrol show hostnames n[1-3]"},
		{"7", "", "", []string{"n1", "n2", "n3"}, "squeue -h -j 7 -o %N; scontrol show hostnames n[1-3]"},
		// Outside an allocation: the default partition's nodes, or those
		// of the partition srun is told to use.
		{"", "", "", []string{"n1", "n2", "n4"}, "sinfo -h -N -r -o %N %P; scontrol show hostnames n1,n2,n4"},
		{"", "", "big", []string{"n2", "n5"}, "sinfo -h -N -r -o %N %P; scontrol show hostnames n2,n5"},
	} {
		calls = nil
		t.Setenv("SLURM_JOB_ID", tc.id)
		t.Setenv("SLURM_JOB_NODELIST", tc.list)
		t.Setenv("SLURM_PARTITION", tc.part)
		got, err := e.SpareHosts()
		if err != nil || !slices.Equal(got, tc.want) || strings.Join(calls, "; ") != tc.calls {
			t.Errorf("SLURM_JOB_ID=%q SLURM_JOB_NODELIST=%q: %v %v (ran %q), want %v (ran %q)", tc.id, tc.list, got, err, calls, tc.want, tc.calls)
		}
	}
	e.Output = func(string, ...string) ([]byte, error) { return nil, errors.New("sinfo: not found") }
	t.Setenv("SLURM_JOB_ID", "")
	if _, err := e.SpareHosts(); err == nil || !strings.Contains(err.Error(), "sinfo: not found") {
		t.Errorf("sinfo failing: %v", err)
	}
	// mpirun outside an allocation: the hosts of its arguments, none
	// without; inside one, the allocation's nodes, as srun's.
	if h, err := (&External{Kind: LauncherMPIRun, Output: fake}).SpareHosts(); h != nil || err != nil {
		t.Errorf("mpirun without hosts: %v %v", h, err)
	}
	mpirun := &External{Kind: LauncherMPIRun, Output: fake, Args: []string{"--bind-to", "none", "--host", "h1:2,h2:2,h3:2"}}
	if h, err := mpirun.SpareHosts(); !slices.Equal(h, []string{"h1", "h2", "h3"}) || err != nil {
		t.Errorf("mpirun --host h1:2,h2:2,h3:2: %v %v", h, err)
	}
	t.Setenv("SLURM_JOB_ID", "7")
	t.Setenv("SLURM_JOB_NODELIST", "n[1-3]")
	calls = nil
	if h, err := mpirun.SpareHosts(); !slices.Equal(h, []string{"n1", "n2", "n3"}) || err != nil || len(calls) != 1 {
		t.Errorf("mpirun in an allocation: %v %v (ran %q)", h, err, calls)
	}
}

// mpirun's hosts are those its arguments name: Open MPI's host lists
// (HOST:SLOTS too, = or a word apart) and host files (with slots=N,
// HOST:N, comments), in order, each once; an unreadable host file is an
// error naming it. withoutHosts leaves the rest of the arguments.
func TestMPIRunHosts(t *testing.T) {
	files := map[string]string{
		"ompi":  "# the nodes\nh2 slots=2\n\nh4 slots=2 # a spare\n",
		"hydra": "h5:3\nh1\n",
	}
	read := func(name string) ([]byte, error) {
		if f, ok := files[name]; ok {
			return []byte(f), nil
		}
		return nil, fs.ErrNotExist
	}
	args := []string{"--bind-to", "none", "-H", "h1,h2:2", "--hostfile", "ompi", "--host=h3", "-x", "A", "-f", "hydra", "--machinefile=ompi"}
	got, err := mpirunHosts(args, read)
	if want := []string{"h1", "h2", "h4", "h3", "h5"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("mpirunHosts: %v %v, want %v", got, err, want)
	}
	if got, dropped := withoutHosts(args, false, OpenMPI); !slices.Equal(got, []string{"--bind-to", "none", "-x", "A"}) ||
		!slices.Equal(dropped, []string{"-H", "h1,h2:2", "--hostfile", "ompi", "--host=h3", "-f", "hydra", "--machinefile=ompi"}) {
		t.Errorf("withoutHosts: %q, dropped %q", got, dropped)
	}
	if _, err := mpirunHosts([]string{"--hostfile", "gone"}, read); err == nil || !strings.Contains(err.Error(), "--hostfile gone") {
		t.Errorf("a missing host file: %v", err)
	}
	// Malformed host arguments are an error naming the option and the
	// value (mpirun would refuse them too, but a pinned relaunch drops
	// them, and the spare would go to a host that is no host): a last
	// option without its value, an empty host, slots that are not a
	// whole number ≥ 1, in a list or in a host file.
	files["bad"] = "h1 slots=2\nh2:x\n"
	files["colon"] = ":4\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bind-to", "none", "--host"}, "--host: no value"},
		{[]string{"-f"}, "-f: no value"},
		{[]string{"--host="}, `--host "": "": no host`},
		{[]string{"-H", "h1,,h2"}, `-H "h1,,h2": "": no host`},
		{[]string{"-hosts", ":2"}, `-hosts ":2": ":2": no host`},
		{[]string{"--host", "h1:x,h2"}, `--host "h1:x,h2": h1:x: slots "x"`},
		{[]string{"--host=h1:0"}, `--host "h1:0": h1:0: slots "0"`},
		{[]string{"-f", "bad"}, `-f bad: line 2: h2:x: slots "x"`},
		{[]string{"--hostfile", "colon"}, `--hostfile colon: line 1: ":4": no host`},
	} {
		got, err := mpirunHosts(c.args, read)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mpirunHosts %q: %v %v, want an error with %q", c.args, got, err, c.want)
		}
	}
}

// A launch placed by ckpt's host file drops the user's host arguments
// (Open MPI refuses a --host its host file lacks); one left to mpirun
// keeps them, and srun's arguments are never touched.
func TestMPIRunPinnedDropsUserHosts(t *testing.T) {
	ompi := &External{Kind: LauncherMPIRun, Flavor: OpenMPI, Args: []string{"--host", "h1:2,h2:2,h3:2", "--bind-to", "none"}}
	if got := strings.Join(ompi.command(4, 2, nil, Place{}, "prog", nil), " "); got != "-np 4 --oversubscribe --host h1:2,h2:2,h3:2 --bind-to none prog" {
		t.Errorf("unplaced: %s", got)
	}
	p, err := ompi.Placement(4, nil, nil, []string{"h1", "h1", "h3", "h3"})
	if err != nil || !p.Pinned {
		t.Fatalf("%+v %v", p, err)
	}
	defer os.Remove(p.File)
	want := "-np 4 --oversubscribe --hostfile " + p.File + " --map-by seq --bind-to none prog"
	if got := strings.Join(ompi.command(4, 2, nil, p, "prog", nil), " "); got != want {
		t.Errorf("pinned:\n%s\nwant\n%s", got, want)
	}
	// The user's own mapping would override ckpt's sequential mapper
	// (Open MPI takes the last --map-by), and the ranks would not go
	// where the pin says: a pinned launch drops it too, and nothing else.
	ompi.Args = []string{"--map-by", "ppr:2:node", "--bind-to", "none", "--rankfile=rf", "-npernode", "2", "-N", "2", "--bynode", "-x", "A"}
	want = "-np 4 --oversubscribe --hostfile " + p.File + " --map-by seq --bind-to none -x A prog"
	if got := strings.Join(ompi.command(4, 2, nil, p, "prog", nil), " "); got != want {
		t.Errorf("pinned, with the user's mapping:\n%s\nwant\n%s", got, want)
	}
	// Not pinned (a host file of the hosts left, its slots), the
	// user's mapping stays.
	if got := strings.Join(ompi.command(4, 2, nil, Place{Args: []string{"--hostfile", "f"}, File: "f"}, "prog", nil), " "); !strings.Contains(got, "--map-by ppr:2:node") {
		t.Errorf("unpinned with a host file: %s", got)
	}
	// Hydra's mapping options that move ranks between hosts (-ppn,
	// -perhost, -grr, -rr, with one dash or two) override its host
	// file's counts: a pinned launch drops them, not -bind-to (within a
	// host), and says so; unpinned they stay.
	hydra := &External{Kind: LauncherMPIRun, Flavor: Hydra, Args: []string{"-ppn", "2", "-bind-to", "core", "--ppn=2", "-rr", "--perhost", "1", "-grr=2", "-genv", "A", "1"}}
	hp, err := hydra.Placement(4, nil, nil, []string{"h1", "h1", "h3", "h3"})
	if err != nil || !hp.Pinned {
		t.Fatalf("%+v %v", hp, err)
	}
	defer os.Remove(hp.File)
	want = "-np 4 -f " + hp.File + " -bind-to core -genv A 1 prog"
	if got := strings.Join(hydra.command(4, 2, nil, hp, "prog", nil), " "); got != want {
		t.Errorf("Hydra pinned, with the user's mapping:\n%s\nwant\n%s", got, want)
	}
	if _, dropped := hydra.userArgs(hp); !slices.Equal(dropped, []string{"-ppn", "2", "--ppn=2", "-rr", "--perhost", "1", "-grr=2"}) {
		t.Errorf("Hydra pinned: dropped %q", dropped)
	}
	if got := strings.Join(hydra.command(4, 2, nil, Place{Args: []string{"-f", "f"}, File: "f"}, "prog", nil), " "); !strings.Contains(got, "-ppn 2 -bind-to core --ppn=2 -rr") {
		t.Errorf("Hydra unpinned with a host file: %s", got)
	}
	srun := &External{Kind: LauncherSrun, Args: []string{"-H", "x"}}
	if got := strings.Join(srun.command(2, 0, nil, Place{File: "f"}, "prog", nil), " "); !strings.HasSuffix(got, " -H x prog") {
		t.Errorf("srun: %s", got)
	}
}

func TestPartitionNodes(t *testing.T) {
	lines := "n1 a\nn2 b\n\nbroken line here\nn3 a\n"
	if got := partitionNodes(lines, ""); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("no default partition: %v, want every node", got)
	}
	if got := partitionNodes(lines, "a"); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("partition a: %v", got)
	}
	if got := partitionNodes(lines, "c"); got != nil {
		t.Errorf("a partition with no node: %v, want none", got)
	}
}

// srun knows hosts by their Slurm node names always; mpirun only inside
// an allocation, where Open MPI's host file must name the allocation's
// nodes.
func TestExternalSlurmNames(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "")
	srun, mpirun := &External{Kind: LauncherSrun}, &External{Kind: LauncherMPIRun}
	if !srun.SlurmNames() || mpirun.SlurmNames() {
		t.Errorf("outside an allocation: srun %v, mpirun %v; want true, false", srun.SlurmNames(), mpirun.SlurmNames())
	}
	t.Setenv("SLURM_JOB_ID", "7")
	if !srun.SlurmNames() || !mpirun.SlurmNames() {
		t.Errorf("inside an allocation: srun %v, mpirun %v; want both", srun.SlurmNames(), mpirun.SlurmNames())
	}
}

// A user's --exclude in --launcher-args joins the nodes ckpt excludes
// after a loss into one --exclude: srun keeps the last of a repeated
// option, so two would let the user's put the failed node back.
func TestSrunMergesExcludes(t *testing.T) {
	for _, c := range []struct {
		user  []string
		place []string
		want  string
	}{
		{[]string{"-x", "n9", "-p", "debug"}, []string{"--exclude=n1"}, "--exclude=n1,n9 -p debug prog"},
		{[]string{"--exclude=n9,n1", "-xn8"}, []string{"--exclude=n1"}, "--exclude=n1,n9,n8 prog"},
		{[]string{"--exclude", "n9"}, nil, "--exclude=n9 prog"},
		{[]string{"-p", "debug"}, []string{"--exclude=n1,n2"}, "--exclude=n1,n2 -p debug prog"},
		{nil, nil, "--export=ALL prog"},
	} {
		srun := External{Kind: LauncherSrun, Args: c.user}
		got := strings.Join(srun.command(2, 0, nil, Place{Args: c.place}, "prog", nil), " ")
		if !strings.HasSuffix(got, c.want) || strings.Count(got, "--exclude") > 1 || strings.Contains(got, "-x") {
			t.Errorf("user %q, ckpt %q: %q, want it to end %q with one --exclude", c.user, c.place, got, c.want)
		}
	}
}
