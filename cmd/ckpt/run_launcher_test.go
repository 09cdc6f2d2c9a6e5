package main

import (
	"os"
	"path/filepath"
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
// values of --nodes, --ntasks-per-node, CKPT_NODES, --exclude and the
// hosts of SLURM_HOSTFILE (pinned=H,H,...), are
// appended to dir/srun.log. It returns the directory to put first on
// PATH.
func fakeSrun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/bash
n=; exports=; exclude=; nodes=; perNode=; arbitrary=; pinned=
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
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
echo "-n $n --export=$exports $* slurm_nodes=$nodes per_node=$perNode nodes=$CKPT_NODES exclude=$exclude pinned=$pinned" >> "` + filepath.Join(dir, "srun.log") + `"
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
	return dir
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
	calls, err := os.ReadFile(filepath.Join(dir, "srun.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 {
		t.Errorf("srun ran %d times, want once per launch (2):\n%s", len(lines), calls)
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
