package capitest

// The Fortran and Python bindings (capi/fortran, capi/python), tested two
// ways:
//
//   - against a recording fake of libscr.so (testdata/fakescr), which logs
//     every call with its arguments and answers from a script: the tests
//     check exactly what the bindings pass to the C API (blank-stripped
//     names, "" for a blank name, buffers) and what they make of its
//     answers (blank padding, IERROR, None, bools, RuntimeError). They
//     need gcc, gfortran and python3, not MPI;
//   - against the real library under mpirun (TestBindingsMPI): Fortran 77,
//     Fortran 90 and Python programs write checkpoints, then restart from
//     the newest and check every byte.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// fakeTimeout bounds one compilation or one run of a fake-backed program;
// it is far above what they take (well under a second) so that a busy
// machine cannot fail them.
const fakeTimeout = 2 * time.Minute

// needTools skips the test loudly without the tools, or fails it where
// the C API's tests must run (mpitest.EnvRequire, CI).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not on PATH: the bindings' tests need it (Debian: apt-get install gcc gfortran python3)", tool)
			if os.Getenv(mpitest.EnvRequire) == "1" || os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED: " + msg)
		}
	}
}

// python is Debian's interpreter, the one with mpi4py (a python3 first on
// PATH may be another one without it), else python3 from PATH.
func python(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	needTools(t, "python3")
	return "python3"
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := mpitest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runCmd runs a command with the test's environment minus SCR_*, CKPT_*,
// FAKESCR_* and PYTHONPATH, plus env; it returns stdout and stderr apart.
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fakeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SCR_") || strings.HasPrefix(kv, "CKPT_") ||
			strings.HasPrefix(kv, "FAKESCR_") || strings.HasPrefix(kv, "PYTHONPATH=") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errOut strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustRun is runCmd for a step that must succeed.
func mustRun(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	stdout, stderr, err := runCmd(t, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout, stderr)
	}
}

// fakePrefix builds the fake libscr.so into PREFIX/lib and installs the
// bindings over it with their own scripts (build.sh with gcc and
// gfortran when fortran is set, install.sh), so those are tested too.
func fakePrefix(t *testing.T, fortran bool) string {
	t.Helper()
	needTools(t, "gcc")
	if fortran {
		needTools(t, "gfortran")
	}
	root := repoRoot(t)
	prefix := t.TempDir()
	lib := filepath.Join(prefix, "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, root, nil, "gcc", "-Wall", "-Werror", "-Wno-format-truncation", "-shared", "-fPIC",
		"-o", filepath.Join(lib, "libscr.so"), filepath.Join(root, "internal/capitest/testdata/fakescr/fakescr.c"))
	if fortran {
		mustRun(t, root, []string{"CC=gcc", "FC=gfortran"}, "bash", "capi/fortran/build.sh", prefix)
	}
	mustRun(t, root, nil, "bash", "capi/python/install.sh", prefix)
	return prefix
}

// fakeRun runs argv with the fake answering from script, and returns its
// standard output and the calls the fake logged, one per line.
func fakeRun(t *testing.T, script string, env []string, argv ...string) (string, []string) {
	t.Helper()
	stdout, stderr, calls, err := fakeTry(t, script, env, argv...)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, stdout, stderr)
	}
	return stdout, calls
}

func fakeTry(t *testing.T, script string, env []string, argv ...string) (stdout, stderr string, calls []string, err error) {
	t.Helper()
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "script")
	logPath := filepath.Join(dir, "log")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append([]string{"FAKESCR_SCRIPT=" + scriptPath, "FAKESCR_LOG=" + logPath}, env...)
	stdout, stderr, err = runCmd(t, dir, env, argv[0], argv[1:]...)
	data, rerr := os.ReadFile(logPath)
	if rerr != nil && !os.IsNotExist(rerr) {
		t.Fatal(rerr)
	}
	if s := strings.TrimSuffix(string(data), "\n"); s != "" {
		calls = strings.Split(s, "\n")
	}
	return stdout, stderr, calls, err
}

var inuseRE = regexp.MustCompile(` inuse=(\d+)$`)

// withoutInuse drops SCR_Config's malloc figure from logged calls.
func withoutInuse(calls []string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = inuseRE.ReplaceAllString(c, "")
	}
	return out
}

// checkFrees fails the test unless malloc held less at the last logged
// SCR_Config than the one returned string it gave before the first
// (size bytes): the binding freed the strings SCR_Config returned.
func checkFrees(t *testing.T, calls []string, size int) {
	t.Helper()
	var inuse []int
	for _, c := range calls {
		if m := inuseRE.FindStringSubmatch(c); m != nil {
			n, _ := strconv.Atoi(m[1])
			inuse = append(inuse, n)
		}
	}
	if len(inuse) < 3 {
		t.Fatalf("want at least 3 SCR_Config calls logged, got %q", calls)
	}
	if grown := inuse[len(inuse)-1] - inuse[0]; grown >= size {
		t.Errorf("malloc holds %d more bytes after %d queries of %d-byte values: the values SCR_Config returned were not freed (%v)",
			grown, len(inuse)-1, size, inuse)
	}
}

// pad is s blank-padded to n characters, as Fortran stores it.
func pad(s string, n int) string {
	return s + strings.Repeat(" ", n-len(s))
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// fortranCases drive testdata/fake_bindings.F90's scenarios: the script
// the fake follows, the calls it must see, and what the program prints.
var fortranCases = []struct {
	scenario, script string
	calls            []string
	out              string
	moduleOnly       bool
}{
	{scenario: "constants", out: "0 1024 0 1 2\n"},
	{
		scenario: "init", script: "SCR_Init rc=1\n",
		calls: []string{"SCR_Init", "SCR_Finalize"},
		out:   "init 1\nfinalize 0\n",
	},
	{
		// Trailing blanks are stripped, leading ones kept; the result is
		// blank-padded to the variable's length (40).
		scenario: "route", script: "SCR_Route_file out=/cache/node0/rank_0.dat\n",
		calls: []string{"SCR_Route_file name=[ckpt.1/rank_0.dat] file=ptr", "SCR_Route_file name=[  lead] file=ptr"},
		out:   "[" + pad("/cache/node0/rank_0.dat", 40) + "] 0\n[" + pad("  lead", 40) + "] 0\n",
	},
	{
		// A failed route leaves FILE blank, not what C left in its buffer.
		scenario: "route-fail", script: "SCR_Route_file rc=1 out=/somewhere/else\n",
		calls: []string{"SCR_Route_file name=[gone.dat] file=ptr"},
		out:   "[" + pad("", 40) + "] 1\n",
	},
	{
		// A path longer than FILE (8) is cut and reported as a failure.
		scenario: "route-long", script: "SCR_Route_file out=/a/very/long/path\n",
		calls: []string{"SCR_Route_file name=[x] file=ptr"},
		out:   "[/a/very/] 1\n",
	},
	{
		scenario: "have-restart", script: "SCR_Have_restart flag=1 out=ckpt.5\nSCR_Have_restart flag=0 out=stale\n",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr", "SCR_Have_restart flag=ptr name=ptr"},
		out:   "flag 1 [" + pad("ckpt.5", 16) + "] 0\nflag 0 [" + pad("", 16) + "] 0\n",
	},
	{
		scenario: "restart", script: "SCR_Start_restart out=ckpt.5\nSCR_Complete_restart rc=1\n",
		calls: []string{"SCR_Start_restart name=ptr", "SCR_Complete_restart valid=0"},
		out:   "[" + pad("ckpt.5", 16) + "] 0\ncomplete 1\n",
	},
	{
		scenario: "output", script: "SCR_Complete_output rc=0\nSCR_Complete_output rc=1\n",
		calls: []string{"SCR_Start_output name=[step-10] flags=3", "SCR_Complete_output valid=1",
			"SCR_Start_output name=[] flags=0", "SCR_Complete_output valid=0"},
		out: "start 0\ncomplete 0\nstart 0\ncomplete 1\n",
	},
	{
		scenario: "checkpoint",
		script:   "SCR_Need_checkpoint flag=1\nSCR_Complete_checkpoint rc=1\nSCR_Should_exit flag=1\n",
		calls: []string{"SCR_Need_checkpoint flag=ptr", "SCR_Start_checkpoint",
			"SCR_Complete_checkpoint valid=0", "SCR_Should_exit flag=ptr"},
		out: "need 1 0\nstart 0\ncomplete 1\nexit 1 0\n",
	},
	{
		scenario: "names", script: "SCR_Drop rc=1\n",
		calls: []string{"SCR_Current name=[ckpt.3]", "SCR_Drop name=[ckpt.2]", "SCR_Delete name=[dir/ckpt.1]"},
		out:   "current 0\ndrop 1\ndelete 0\n",
	},
	{
		// Set: no value, success. Query: the value, or failure when there
		// is none (also in the multi-item form). Multi-item set: success.
		scenario: "config", script: "SCR_Config\nSCR_Config out=1\n",
		calls: []string{"SCR_Config config=[SCR_FLUSH=1]", "SCR_Config config=[SCR_FLUSH]", "SCR_Config config=[SCR_DEBUG]",
			"SCR_Config config=[CKPT=0 TYPE]", "SCR_Config config=[CKPT=0 TYPE=XOR]"},
		out: "[" + pad("", 24) + "] 0\n[" + pad("1", 24) + "] 0\n[" + pad("", 24) + "] 1\n[" +
			pad("", 24) + "] 1\n[" + pad("", 24) + "] 0\n",
	},
	{
		scenario: "version", moduleOnly: true,
		calls: []string{"SCR_Get_version"},
		out:   "[v3.1.0  ] 0\n",
	},
}

// TestFortranBindingsFake runs every scenario through libscrf's
// subroutines (include 'scrf.h') and through module scr (use scr).
func TestFortranBindingsFake(t *testing.T) {
	prefix := fakePrefix(t, true)
	root := repoRoot(t)
	src := filepath.Join(root, "internal/capitest/testdata/fake_bindings.F90")
	bin := t.TempDir()
	link := []string{"-I", filepath.Join(prefix, "include"), "-L", filepath.Join(prefix, "lib"),
		"-Wl,-rpath," + filepath.Join(prefix, "lib"), "-lscrf", "-lscr"}
	builds := map[string][]string{
		"include": {"-o", filepath.Join(bin, "include"), src},
		"module":  {"-DUSE_MODULE", "-o", filepath.Join(bin, "module"), src},
	}
	for _, name := range []string{"include", "module"} {
		mustRun(t, bin, nil, "gfortran", append(append([]string{"-Wall"}, builds[name]...), link...)...)
		prog := filepath.Join(bin, name)
		t.Run(name, func(t *testing.T) {
			for _, c := range fortranCases {
				if c.moduleOnly && name != "module" {
					continue
				}
				t.Run(c.scenario, func(t *testing.T) {
					out, calls := fakeRun(t, c.script, nil, prog, c.scenario)
					if out != c.out {
						t.Errorf("output:\n got %q\nwant %q", out, c.out)
					}
					equalLines(t, "calls", withoutInuse(calls), c.calls)
				})
			}
			t.Run("config-frees", func(t *testing.T) {
				script := strings.Repeat("SCR_Config len=8000\n", 3)
				out, calls := fakeRun(t, script, nil, prog, "config-frees")
				if out != "done\n" {
					t.Fatalf("output %q, want done", out)
				}
				checkFrees(t, calls, 8000)
			})
		})
	}

	// scrf.h in fixed form (column 7, continuation in column 6).
	t.Run("fixed-form", func(t *testing.T) {
		prog := filepath.Join(bin, "fixed")
		mustRun(t, bin, nil, "gfortran", append([]string{"-Wall", "-o", prog,
			filepath.Join(root, "internal/capitest/testdata/fake_fixed.f")}, link...)...)
		out, calls := fakeRun(t, "SCR_Have_restart flag=1 out=ckpt.9\n", nil, prog)
		if want := "0 1024 0 1 2\nflag 1 [" + pad("ckpt.9", 12) + "] 0\n"; out != want {
			t.Errorf("output:\n got %q\nwant %q", out, want)
		}
		equalLines(t, "calls", calls, []string{"SCR_Start_output name=[fixed.1] flags=2",
			"SCR_Have_restart flag=ptr name=ptr"})
	})
}

// TestFortranBuildFails: build.sh stops with one line saying what is
// missing, and installs nothing, without libscr.so or with a Fortran
// compiler that is not there.
func TestFortranBuildFails(t *testing.T) {
	needTools(t, "gcc")
	root := repoRoot(t)
	cases := []struct {
		name, want string
		env        []string
		withLib    bool
	}{
		{name: "no libscr", want: "lib/libscr.so is missing: install the C library first", env: []string{"CC=gcc", "FC=gcc"}},
		{name: "no compiler", want: "no Fortran compiler (no-such-fc not found)", env: []string{"CC=gcc", "FC=no-such-fc"}, withLib: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := t.TempDir()
			if c.withLib {
				prefix = fakePrefix(t, false)
			}
			stdout, stderr, err := runCmd(t, root, c.env, "bash", "capi/fortran/build.sh", prefix)
			if err == nil {
				t.Fatalf("build.sh succeeded:\n%s%s", stdout, stderr)
			}
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("want one line saying %q, got:\n%s", c.want, stderr)
			}
			for _, f := range []string{"lib/libscrf.so", "include/scrf.h", "include/scr.mod"} {
				if _, err := os.Stat(filepath.Join(prefix, f)); err == nil {
					t.Errorf("a failed build installed %s", f)
				}
			}
		})
	}
}

// pythonCases run code (after "import scr") with the fake answering from
// script: the calls it must see and what the code prints.
var pythonCases = []struct {
	name, script, code string
	calls              []string
	out                string
}{
	{
		name: "constants", code: "print(scr.FLAG_NONE, scr.FLAG_CHECKPOINT, scr.FLAG_OUTPUT, scr.get_version())",
		calls: []string{"SCR_Get_version"}, out: "0 1 2 v3.1.0\n",
	},
	{
		name: "have_restart none", code: "print(repr(scr.have_restart()))",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr"}, out: "None\n",
	},
	{
		name: "have_restart name", script: "SCR_Have_restart flag=1 out=ckpt.5\n",
		code:  "print(repr(scr.have_restart()), repr(scr.start_restart()))",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr"}, out: "'ckpt.5' ''\n",
	},
	{
		name:   "bools",
		script: "SCR_Need_checkpoint flag=1\nSCR_Should_exit flag=1\nSCR_Should_exit flag=0\nSCR_Complete_restart rc=1\nSCR_Complete_output rc=1\n",
		code: "print(repr(scr.need_checkpoint()), repr(scr.need_checkpoint()), repr(scr.should_exit()), repr(scr.should_exit()),\n" +
			"  repr(scr.complete_restart(0)), repr(scr.complete_restart()), repr(scr.complete_output()), repr(scr.complete_output(False)))",
		calls: []string{"SCR_Need_checkpoint flag=ptr", "SCR_Need_checkpoint flag=ptr", "SCR_Should_exit flag=ptr",
			"SCR_Should_exit flag=ptr", "SCR_Complete_restart valid=0", "SCR_Complete_restart valid=1",
			"SCR_Complete_output valid=1", "SCR_Complete_output valid=0"},
		out: "True False True False False True False True\n",
	},
	{
		name: "RuntimeError on failure",
		script: "SCR_Init rc=1\nSCR_Finalize rc=1\nSCR_Route_file rc=1\nSCR_Have_restart rc=1\nSCR_Start_restart rc=1\n" +
			"SCR_Need_checkpoint rc=1\nSCR_Start_output rc=1\nSCR_Should_exit rc=1\nSCR_Current rc=1\nSCR_Drop rc=1\nSCR_Delete rc=1\n",
		code: "for f in (scr.init, scr.finalize, lambda: scr.route_file('x'), scr.have_restart, scr.start_restart,\n" +
			"    scr.need_checkpoint, lambda: scr.start_output('a', 1), scr.should_exit,\n" +
			"    lambda: scr.current('a'), lambda: scr.drop('a'), lambda: scr.delete('a')):\n" +
			"  try:\n    f()\n    print('no error')\n  except RuntimeError as e:\n    print(e)",
		calls: []string{"MPI_Initialized", "SCR_Init", "SCR_Finalize", "SCR_Route_file name=[x] file=ptr",
			"SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr", "SCR_Need_checkpoint flag=ptr",
			"SCR_Start_output name=[a] flags=1", "SCR_Should_exit flag=ptr", "SCR_Current name=[a]",
			"SCR_Drop name=[a]", "SCR_Delete name=[a]"},
		out: "SCR_Init failed (returned 1)\nSCR_Finalize failed (returned 1)\nSCR_Route_file failed (returned 1)\n" +
			"SCR_Have_restart failed (returned 1)\nSCR_Start_restart failed (returned 1)\nSCR_Need_checkpoint failed (returned 1)\n" +
			"SCR_Start_output failed (returned 1)\nSCR_Should_exit failed (returned 1)\nSCR_Current failed (returned 1)\n" +
			"SCR_Drop failed (returned 1)\nSCR_Delete failed (returned 1)\n",
	},
	{
		// Without MPI, init says so instead of reaching SCR_Init.
		name: "init before MPI", script: "MPI_Initialized flag=0\n",
		code:  "try:\n  scr.init()\nexcept RuntimeError as e:\n  print(e)",
		calls: []string{"MPI_Initialized"},
		out:   "scr.init: MPI is not initialised: run 'from mpi4py import MPI' first\n",
	},
	{
		name: "init params", code: "scr.init({'SCR_FLUSH': 1, 'SCR_DEBUG': None}); scr.init(['SCR_COPY_TYPE=XOR'])",
		calls: []string{"MPI_Initialized", "SCR_Config config=[SCR_FLUSH=1]", "SCR_Config config=[SCR_DEBUG=]", "SCR_Init",
			"SCR_Config config=[SCR_COPY_TYPE=XOR]", "SCR_Init"},
	},
	{
		name: "config", script: "SCR_Config\nSCR_Config out=1\n",
		code:  "print(repr(scr.config('SCR_FLUSH=1')), repr(scr.config('SCR_FLUSH')), repr(scr.config('SCR_DEBUG')))",
		calls: []string{"MPI_Initialized", "SCR_Config config=[SCR_FLUSH=1]", "SCR_Config config=[SCR_FLUSH]", "SCR_Config config=[SCR_DEBUG]"},
		out:   "None '1' None\n",
	},
	{
		// None and "" reach C as NULL and "" (both: the default name).
		name: "start_output names", code: "import pathlib\n" +
			"scr.start_output(None, scr.FLAG_OUTPUT); scr.start_output('', scr.FLAG_CHECKPOINT | scr.FLAG_OUTPUT)\n" +
			"print(scr.route_file(pathlib.Path('dir/x.npy')))",
		calls: []string{"SCR_Start_output name=NULL flags=2", "SCR_Start_output name=[] flags=3", "SCR_Route_file name=[dir/x.npy] file=ptr"},
		out:   "dir/x.npy\n",
	},
	{
		name: "output block", script: "SCR_Route_file out=/cache/node0/x.npy\n",
		code: "with scr.output('step-10', scr.FLAG_CHECKPOINT | scr.FLAG_OUTPUT) as out:\n" +
			"  print(out.ok, out.route('x.npy'))\nprint(out.ok)",
		calls: []string{"SCR_Start_output name=[step-10] flags=3", "SCR_Route_file name=[x.npy] file=ptr", "SCR_Complete_output valid=1"},
		out:   "None /cache/node0/x.npy\nTrue\n",
	},
	{
		// An exception completes the dataset invalid and goes on.
		name: "output block raises", script: "SCR_Complete_output rc=1\n",
		code: "try:\n  with scr.output('step-11') as out:\n    raise ValueError('disk full')\n" +
			"except ValueError as e:\n  print('raised', e)\nprint(out.ok)",
		calls: []string{"SCR_Start_output name=[step-11] flags=1", "SCR_Complete_output valid=0"},
		out:   "raised disk full\nFalse\n",
	},
	{
		name: "output block invalid", script: "SCR_Complete_output rc=1\n",
		code:  "with scr.output() as out:\n  out.valid = False\nprint(out.ok)",
		calls: []string{"SCR_Start_output name=NULL flags=1", "SCR_Complete_output valid=0"},
		out:   "False\n",
	},
	{
		// The newest fails (voted invalid), the next older is restored, and
		// no older one is asked for after it.
		name: "restarts",
		script: "SCR_Have_restart flag=1 out=ckpt.3\nSCR_Have_restart flag=1 out=ckpt.2\nSCR_Have_restart flag=1 out=ckpt.1\n" +
			"SCR_Start_restart out=ckpt.3\nSCR_Start_restart out=ckpt.2\nSCR_Complete_restart rc=1\n",
		code: "for r in scr.restarts():\n  with r:\n    print(r.name, r.route('state.bin'))\n" +
			"    r.valid = r.name != 'ckpt.3'\n  print(r.name, r.ok)",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr", "SCR_Route_file name=[state.bin] file=ptr",
			"SCR_Complete_restart valid=0", "SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr",
			"SCR_Route_file name=[state.bin] file=ptr", "SCR_Complete_restart valid=1"},
		out: "ckpt.3 state.bin\nckpt.3 False\nckpt.2 state.bin\nckpt.2 True\n",
	},
	{
		name: "restarts none", code: "print([r.name for r in scr.restarts()])",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr"}, out: "[]\n",
	},
	{
		// A body that raises votes invalid once; the exception goes on.
		name: "restarts raises", script: "SCR_Have_restart flag=1 out=c1\nSCR_Start_restart out=c1\nSCR_Complete_restart rc=1\n",
		code: "try:\n  for r in scr.restarts():\n    with r:\n      raise OSError('unreadable')\n" +
			"except OSError as e:\n  print('raised', e, r.ok)",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr", "SCR_Complete_restart valid=0"},
		out:   "raised unreadable False\n",
	},
	{
		// A body without a with block: the loop completes it (valid).
		name: "restarts without with", script: "SCR_Have_restart flag=1 out=c1\nSCR_Start_restart out=c1\n",
		code:  "for r in scr.restarts():\n  pass\nprint(r.ok)",
		calls: []string{"SCR_Have_restart flag=ptr name=ptr", "SCR_Start_restart name=ptr", "SCR_Complete_restart valid=1"},
		out:   "True\n",
	},
}

// TestPythonBindingsFake runs the module scr, installed by install.sh
// beside the fake libscr.so, which it must find without being told.
func TestPythonBindingsFake(t *testing.T) {
	py := python(t)
	prefix := fakePrefix(t, false)
	env := []string{"PYTHONPATH=" + filepath.Join(prefix, "lib", "python")}
	for _, c := range pythonCases {
		t.Run(c.name, func(t *testing.T) {
			out, calls := fakeRun(t, c.script, env, py, "-c", "import scr\n"+c.code)
			if out != c.out {
				t.Errorf("output:\n got %q\nwant %q", out, c.out)
			}
			equalLines(t, "calls", withoutInuse(calls), c.calls)
		})
	}

	t.Run("config frees", func(t *testing.T) {
		out, calls := fakeRun(t, strings.Repeat("SCR_Config len=8000\n", 4), env, py, "-c",
			"import scr\nprint([len(scr.config('SCR_PREFIX')) for i in range(4)])")
		if out != "[8000, 8000, 8000, 8000]\n" {
			t.Fatalf("output %q", out)
		}
		checkFrees(t, calls, 8000)
	})

	// CKPT_LIBSCR is obeyed: the module installed where no libscr.so is
	// beside it loads the one the variable names, and fails to import,
	// naming the path and the variable, when that one is missing.
	t.Run("CKPT_LIBSCR", func(t *testing.T) {
		alone := t.TempDir()
		mustRun(t, repoRoot(t), nil, "bash", "capi/python/install.sh", alone)
		env := []string{"PYTHONPATH=" + filepath.Join(alone, "lib", "python")}
		code := "import scr\nprint(scr.have_restart())"
		_, stderr, _, err := fakeTry(t, "", env, py, "-c", code)
		if err == nil || !strings.Contains(stderr, "ImportError") || !strings.Contains(stderr, filepath.Join(alone, "lib", "libscr.so")) {
			t.Errorf("without a library beside it the import must fail naming the path it tried: err %v\n%s", err, stderr)
		}
		out, calls := fakeRun(t, "", append(env, jobenv.VarLibSCR+"="+filepath.Join(prefix, "lib", "libscr.so")), py, "-c", code)
		if out != "None\n" || len(calls) != 1 {
			t.Errorf("with CKPT_LIBSCR: output %q, calls %q", out, calls)
		}
		missing := filepath.Join(t.TempDir(), "libscr.so")
		_, stderr, _, err = fakeTry(t, "", append(env, jobenv.VarLibSCR+"="+missing), py, "-c", code)
		if err == nil || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "CKPT_LIBSCR") {
			t.Errorf("a missing CKPT_LIBSCR must fail the import naming it: err %v\n%s", err, stderr)
		}
	})
}

// bindingProgram is an integration program of the bindings: run with
// "start" it writes checkpoints and an OUTPUT dataset, then with
// "restart" it restarts from them; every rank prints one line for each.
type bindingProgram struct {
	name string
	// argv builds the program against the installation and returns the
	// command that runs it, and the environment it needs.
	argv func(t *testing.T, prefix string) ([]string, []string)
	// wrote and restarted are rank R's lines (%d: the rank) after each run.
	wrote, restarted string
	// outDir holds the OUTPUT dataset's files under the prefix, rank_R.txt,
	// each with one line (outLine: %d the rank, %d the size).
	outDir, outLine string
	// env is the SCR parameters the program needs beyond the defaults.
	env []string
}

func compiled(src string) func(t *testing.T, prefix string) ([]string, []string) {
	return func(t *testing.T, prefix string) ([]string, []string) {
		return []string{mpitest.Build(t, prefix, filepath.Join(repoRoot(t), "internal/capitest/testdata", src))}, nil
	}
}

func pythonScript(src string) func(t *testing.T, prefix string) ([]string, []string) {
	return func(t *testing.T, prefix string) ([]string, []string) {
		return []string{python(t), filepath.Join(repoRoot(t), "internal/capitest/testdata", src)},
			[]string{"PYTHONPATH=" + filepath.Join(prefix, "lib", "python")}
	}
}

var bindingPrograms = []bindingProgram{
	{
		name: "f77", argv: compiled("scr_f77.f"),
		wrote: "rank %d wrote 3 checkpoints", restarted: "rank %d restarted from ckpt.3",
		outDir: "f77out", outLine: "f77 rank %d of %d\n",
	},
	{
		name: "f90", argv: compiled("scr_f90.f90"),
		wrote: "rank %d wrote 4 checkpoints", restarted: "rank %d restarted from step.4",
		outDir: "f90out", outLine: "f90 rank %d of %d\n",
	},
	{
		name: "python", argv: pythonScript("scr_py.py"),
		wrote: "rank %d wrote 3 checkpoints", restarted: "rank %d restarted from pyckpt.2",
		outDir: "pyout", outLine: "py rank %d of %d\n",
		// After pyckpt.3 fails, pyckpt.2 must still exist: the cache keeps
		// only the newest datasets (as SCR's does), the prefix every
		// flushed one.
		env: []string{"SCR_FLUSH=1"},
	},
	{
		name: "pythonic", argv: pythonScript("scr_pythonic.py"),
		wrote: "rank %d wrote 3 checkpoints", restarted: "rank %d restarted from py-step-3",
		outDir: "pyviz", outLine: "viz rank %d of %d\n",
	},
}

// TestBindingsMPI runs the Fortran 77, Fortran 90 and Python programs
// against the real library under mpirun at 1 and 4 ranks, each in a
// prefix of its own: a first run writes checkpoints and an OUTPUT
// dataset, a second restarts and checks every byte it reads back. The
// programs abort on any difference; the test checks every rank's lines
// and the OUTPUT dataset's files at their paths under the prefix.
func TestBindingsMPI(t *testing.T) {
	prefix := mpitest.Install(t)
	for _, p := range bindingPrograms {
		t.Run(p.name, func(t *testing.T) {
			argv, env := p.argv(t, prefix)
			for _, np := range []int{1, 4} {
				t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
					dir := t.TempDir()
					env := append([]string{
						"SCR_PREFIX=" + dir,
						"SCR_CACHE_BASE=" + t.TempDir(),
						"SCR_JOB_ID=bindings",
						// One simulated node per rank, as on a cluster.
						jobenv.VarSCRNodes + "=" + strconv.Itoa(np),
					}, append(env, p.env...)...)

					out, err := mpitest.Run(t, np, dir, env, append(argv, "start")...)
					if err != nil {
						t.Fatalf("start run: %v\n%s", err, out)
					}
					everyRank(t, "start run", out, np, p.wrote)
					for r := 0; r < np; r++ {
						path := filepath.Join(dir, p.outDir, fmt.Sprintf("rank_%d.txt", r))
						data, err := os.ReadFile(path)
						if err != nil {
							t.Errorf("the OUTPUT dataset's file is not at its path under the prefix: %v", err)
						} else if want := fmt.Sprintf(p.outLine, r, np); string(data) != want {
							t.Errorf("%s holds %q, want %q", path, data, want)
						}
					}

					out, err = mpitest.Run(t, np, dir, env, append(argv, "restart")...)
					if err != nil {
						t.Fatalf("restart run: %v\n%s", err, out)
					}
					everyRank(t, "restart run", out, np, p.restarted)
				})
			}
		})
	}
}

// TestPythonWithoutMPI: the real library, imported without mpi4py, makes
// scr.init raise a RuntimeError that says what to do, rather than letting
// MPI end the process.
func TestPythonWithoutMPI(t *testing.T) {
	prefix := mpitest.Install(t)
	stdout, stderr, err := runCmd(t, t.TempDir(), []string{"PYTHONPATH=" + filepath.Join(prefix, "lib", "python")},
		python(t), "-c", "import scr\ntry:\n  scr.init()\nexcept RuntimeError as e:\n  print(e)")
	if want := "scr.init: MPI is not initialised: run 'from mpi4py import MPI' first\n"; err != nil || stdout != want {
		t.Errorf("got %q (%v), want %q\n%s", stdout, err, want, stderr)
	}
}

// everyRank fails the test unless out has line (%d: the rank) for each
// of np ranks. Lines are looked for anywhere: mpirun forwards each rank's
// output in chunks, and may put another rank's chunk before a newline.
func everyRank(t *testing.T, what, out string, np int, line string) {
	t.Helper()
	for r := 0; r < np; r++ {
		if want := fmt.Sprintf(line, r); !strings.Contains(out, want) {
			t.Errorf("%s: no line %q in the output:\n%s", what, want, out)
		}
	}
}
