package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/launch"
)

// underLauncher puts jobSpec's job on 2 nodes (two ranks on each, XOR
// across the two) under the launcher of kind.
func underLauncher(t *testing.T, spec *runSpec, kind string) {
	t.Helper()
	spec.nodes, spec.redundancy = 2, "xor:2"
	l, err := launch.NewExternal(kind, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.launcher = l
}

// Under mpirun the job's ranks are on the two simulated nodes ckpt run's
// own would use (each found its node and cache from CKPT_NODES and
// CKPT_CACHE_ROOT, its rank from Open MPI's variables). A node lost (its
// two ranks killed by their pids, found in the coordinator, and its cache
// deleted) ends mpirun; the job is launched again through a new mpirun,
// rebuilds the node from XOR parity and ends with the failure-free result.
func TestRunUnderMPIRunNodeLossRebuilds(t *testing.T) {
	mpitest.RequireTools(t, "mpirun")
	spec, log := jobSpec(t)
	spec.keepCache = true
	underLauncher(t, &spec, launch.LauncherMPIRun)
	res := runNodeLoss(t, spec, log)
	if res.Launcher != launch.LauncherMPIRun {
		t.Errorf("launcher %q, want mpirun", res.Launcher)
	}
	if a := res.Attempts[0]; a.Class != launch.ClassFailure {
		t.Errorf("the failed mpirun was classed %q (%s), want %q", a.Class, a.Cause, launch.ClassFailure)
	}
	for _, node := range []string{"node0", "node1"} {
		ents, err := os.ReadDir(filepath.Join(spec.cacheRoot, node))
		if err != nil || len(ents) == 0 {
			t.Errorf("node %s's cache: %d entries, %v: the ranks did not derive their nodes\n%s", node, len(ents), err, log)
		}
	}
	if _, err := os.Stat(filepath.Join(spec.cacheRoot, "node2")); err == nil {
		t.Errorf("a cache of node2 exists: 2 nodes were asked for")
	}
}

// fakeSrun writes a stand-in for Slurm's srun, which runs where Slurm is
// not installed (run_slurm_test.go runs the real one): it checks its
// arguments as ckpt run passes them (-n N, --kill-on-bad-exit=1,
// --export=ALL,NAME,... with every name set, --exclude=HOSTS, --nodes=K
// --distribution=block with a --ntasks-per-node that multiplies to N, or
// --distribution=arbitrary with SLURM_HOSTFILE naming N hosts, --nodes=K
// of them),
// starts N processes with SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID,
// kills the others after a task's bad exit, and exits with the first bad
// task's status (a signal as 128+N). Each call's arguments, with the
// values of --nodes, --ntasks-per-node, CKPT_NODES, --exclude, the
// hosts of SLURM_HOSTFILE (pinned=H,H,...) and --jobid (which must be the
// fake salloc's 4242), are appended to dir/srun.log. It returns the
// directory to put first on PATH.
func fakeSrun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/bash
n=; exports=; exclude=; nodes=; perNode=; arbitrary=; pinned=; jobid=
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
    --jobid=*) jobid=${1#--jobid=}; shift;;
    --kill-on-bad-exit=1) shift;;
    --export=*) exports=${1#--export=}; shift;;
    --exclude=*) exclude=${1#--exclude=}; shift;;
    --nodes=*) nodes=${1#--nodes=}; shift;;
    --distribution=block) shift;;
    --distribution=arbitrary) arbitrary=1; shift;;
    --ntasks-per-node=*) perNode=${1#--ntasks-per-node=}; shift;;
    -*) echo "fake srun: unknown option $1" >&2; exit 2;;
    *) break;;
  esac
done
[ -n "$n" ] && [ $# -gt 0 ] || { echo "fake srun: want -n N and a program" >&2; exit 2; }
IFS=, read -ra names <<< "$exports"
[ "${names[0]}" = ALL ] || { echo "fake srun: --export=$exports does not start with ALL" >&2; exit 2; }
for v in "${names[@]:1}"; do
  [ -n "${!v+x}" ] || { echo "fake srun: $v exported but not set" >&2; exit 2; }
done
if [ -n "$perNode" ] && [ $((perNode * nodes)) -ne "$n" ]; then
  echo "fake srun: --ntasks-per-node=$perNode on --nodes=$nodes is not -n $n" >&2; exit 2
fi
if [ -n "$arbitrary" ]; then
  [ -r "$SLURM_HOSTFILE" ] || { echo "fake srun: --distribution=arbitrary without a SLURM_HOSTFILE" >&2; exit 2; }
  mapfile -t hosts < "$SLURM_HOSTFILE"
  [ "${#hosts[@]}" -eq "$n" ] || { echo "fake srun: SLURM_HOSTFILE has ${#hosts[@]} hosts for -n $n" >&2; exit 2; }
  [ "$(printf '%s\n' "${hosts[@]}" | sort -u | wc -l)" -eq "$nodes" ] || { echo "fake srun: --nodes=$nodes, not the host file's number" >&2; exit 2; }
  pinned=$(IFS=,; echo "${hosts[*]}")
fi
if [ -n "$jobid" ] && [ "$jobid" != 4242 ]; then
  echo "fake srun: --jobid=$jobid is not the allocation fake salloc granted (4242)" >&2; exit 2
fi
echo "-n $n --export=$exports $* slurm_nodes=$nodes per_node=$perNode nodes=$CKPT_NODES exclude=$exclude pinned=$pinned jobid=$jobid" >> "` + filepath.Join(dir, "srun.log") + `"
pids=()
for ((i = 0; i < n; i++)); do
  SLURM_PROCID=$i SLURM_NTASKS=$n SLURM_LOCALID=$i "$@" &
  pids+=($!)
done
trap 'kill -KILL "${pids[@]}" 2>/dev/null; exit 143' TERM
status=0
for ((k = 0; k < n; k++)); do
  wait -n; s=$?
  if [ $s -ne 0 ] && [ $status -eq 0 ]; then
    status=$s
    kill -KILL "${pids[@]}" 2>/dev/null
  fi
done
exit $status
`
	if err := os.WriteFile(filepath.Join(dir, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// salloc as ckpt run holds an allocation outside one (launch.Hold):
	// it checks the arguments ckpt passes, appends them to salloc.log
	// and grants job 4242 (or, with a file dir/salloc.fail, refuses);
	// scancel appends its arguments to scancel.log.
	salloc := `#!/bin/bash
echo "$*" >> "` + filepath.Join(dir, "salloc.log") + `"
if [ -e "` + filepath.Join(dir, "salloc.fail") + `" ]; then
  echo "salloc: error: Job submit/allocate failed: Requested node configuration is not available" >&2; exit 1
fi
[ "$1 $2 $3" = "--no-shell --no-kill --exclusive" ] || { echo "fake salloc: want --no-shell --no-kill --exclusive first: $*" >&2; exit 2; }
[[ "$4" == --nodes=[1-9]* ]] && [[ "$5" == --job-name=ckpt-* ]] || { echo "fake salloc: want --nodes=K --job-name=ckpt-...: $*" >&2; exit 2; }
echo "salloc: Granted job allocation 4242" >&2
`
	scancel := "#!/bin/sh\necho \"$*\" >> \"" + filepath.Join(dir, "scancel.log") + "\"\n"
	for name, text := range map[string]string{"salloc": salloc, "scancel": scancel} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeLog is the lines of one of the fakes' logs in dir (srun.log,
// salloc.log, scancel.log), none if it does not exist.
func fakeLog(t *testing.T, dir, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A rank killed under (a fake) srun, found by its pid, ends the step; the
// job is launched again through srun and restores from the caches.
func TestRunUnderFakeSrunRecovers(t *testing.T) {
	dir := fakeSrun(t)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	spec, log := jobSpec(t)
	underLauncher(t, &spec, launch.LauncherSrun)
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		injectAfter(c, coords, 2)
	})
	if res.Injected != 1 || res.Restarts["cache"] != 1 || len(res.Attempts) != 2 {
		t.Errorf("injected %d, restarts %v, attempts %d; want one rank killed and one restart from the caches\n%s",
			res.Injected, res.Restarts, len(res.Attempts), log)
	}
	lines := fakeLog(t, dir, "srun.log")
	calls := strings.Join(lines, "\n")
	if len(lines) != 2 {
		t.Errorf("srun ran %d times, want once per launch (2):\n%s", len(lines), calls)
	}
	// Outside an allocation, ckpt held one for the job (its 2 nodes),
	// ran every launch as a step of it, and released it at the end.
	for _, l := range lines {
		if !strings.HasSuffix(l, " jobid=4242") {
			t.Errorf("a launch not in the allocation ckpt held (--jobid=4242): %s", l)
		}
	}
	if got := fakeLog(t, dir, "salloc.log"); len(got) != 1 || !strings.Contains(got[0], "--nodes=2 ") {
		t.Errorf("salloc's calls %q, want one, for 2 nodes", got)
	}
	if got := fakeLog(t, dir, "scancel.log"); !slices.Equal(got, []string{"4242"}) {
		t.Errorf("scancel's calls %q, want the allocation released once (4242)", got)
	}
	if !strings.Contains(log.String(), "holding allocation 4242 (2 nodes") {
		t.Errorf("the output does not say which allocation ckpt held:\n%s", log)
	}
	for _, want := range []string{"-n 4 ", "CKPT_COORD", "CKPT_TOKEN", "CKPT_INCARNATION", "CKPT_NODES", "CKPT_CACHE_ROOT", "slurm_nodes=2 per_node=2"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("srun's arguments %q lack %q", lines[0], want)
		}
	}
	if strings.Contains(lines[0], "CKPT_RANK") || strings.Contains(lines[0], "CKPT_NODE,") {
		t.Errorf("srun's arguments %q pass a rank's own variable to every rank", lines[0])
	}
}

// --launcher is checked before anything starts: an unknown name, and a
// launcher missing from PATH, are usage errors naming them.
func TestRunLauncherErrors(t *testing.T) {
	checkBadInput(t, []string{"--launcher", `"pbsrun"`}, "run", "-n", "2", "--launcher", "pbsrun", "--", "true")
	checkBadInput(t, []string{"--launcher-args", "local"}, "run", "-n", "2", "--launcher-args", "-v", "--", "true")
	checkBadInput(t, []string{"--tree"}, "run", "-n", "2", "--launcher", "srun", "--tree", "--", "true")
	t.Setenv("PATH", t.TempDir())
	for _, l := range []string{"mpirun", "srun"} {
		checkBadInput(t, []string{"--launcher " + l, "not on PATH"}, "run", "-n", "2", "--launcher", l, "--", "true")
	}
}

// --json says which launcher ran the job: local by default.
func TestRunJSONNamesTheLauncher(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, append([]string{"run", "-n", "1", "--interval", "none", "--json",
		"--cache-root", filepath.Join(t.TempDir(), "job"), "--", exe}, himenoArgs...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if obj := decodeOne(t, stdout); obj["launcher"] != launch.LauncherLocal {
		t.Errorf("launcher %v, want %q", obj["launcher"], launch.LauncherLocal)
	}
}

// srun outside an allocation whose allocation is refused: ckpt run says
// what salloc said and launches nothing; the refused request is cancelled
// by its name. Inside an allocation (SLURM_JOB_ID) and with --jobid in
// --launcher-args, ckpt holds none: no salloc, and srun gets no --jobid
// of ckpt's.
func TestRunUnderFakeSrunAllocation(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		dir := fakeSrun(t)
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		if err := os.WriteFile(filepath.Join(dir, "salloc.fail"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		spec, log := jobSpec(t)
		underLauncher(t, &spec, launch.LauncherSrun)
		spec.spares = 1
		res, err := spec.run(t.Context())
		if err == nil || !strings.Contains(err.Error(), "Requested node configuration is not available") ||
			!strings.Contains(err.Error(), "--nodes=3") {
			t.Fatalf("error %v: want salloc's refusal of 3 nodes\n%s", err, log)
		}
		if len(res.Attempts) != 0 || fakeLog(t, dir, "srun.log") != nil {
			t.Errorf("%d attempts, srun calls %q: want nothing launched", len(res.Attempts), fakeLog(t, dir, "srun.log"))
		}
		if got := fakeLog(t, dir, "scancel.log"); len(got) != 1 || !strings.HasPrefix(got[0], "--name=ckpt-") {
			t.Errorf("scancel's calls %q, want the request cancelled by its name", got)
		}
	})
	for _, tc := range []struct {
		name, env string
		args      []string
	}{
		{"in an allocation", "77", nil},
		{"--jobid given", "", []string{"--jobid=4242"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeSrun(t)
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			t.Setenv("SLURM_JOB_ID", tc.env)
			if tc.env == "" {
				os.Unsetenv("SLURM_JOB_ID")
			}
			spec, log := jobSpec(t)
			underLauncher(t, &spec, launch.LauncherSrun)
			spec.launcher.(*launch.External).Args = tc.args
			if _, err := spec.run(t.Context()); err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			if got := fakeLog(t, dir, "salloc.log"); got != nil {
				t.Errorf("salloc ran: %q", got)
			}
			want := " jobid="
			if tc.args != nil {
				want = " jobid=4242" // the user's own
			}
			for _, l := range fakeLog(t, dir, "srun.log") {
				if !strings.HasSuffix(l, want) || strings.Count(l, "--jobid") > 1 {
					t.Errorf("srun's call %q, want it to end %q", l, want)
				}
			}
		})
	}
}
