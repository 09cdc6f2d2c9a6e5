package jobdir

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary a process that holds a job's lock until
// it is killed (TestLockReleasedOnKill).
const helperEnv = "JOBDIR_TEST_HOLD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if _, err := At(dir).Acquire(testSpec()); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		select {} // until killed
	}
	os.Exit(m.Run())
}

func testSpec() Spec {
	return Spec{Program: "/bin/app", Args: []string{"--size", "s"}, Ranks: 4, Nodes: 2, Redundancy: "xor:2"}
}

func TestValidName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "../../etc", "a/b", `a\b`, ".hidden", "x\x00y", strings.Repeat("a", 256),
		// Names of a job directory's own entries: a job so named in a
		// root used as a job's directory would be deleted as its entry.
		"node0", "node12", "staging", "job.lock", "job.json", "status.json", "halt", "checkpoint"} {
		if err := ValidName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("ValidName(%q) = %v, want ErrBadName", bad, err)
		}
		if _, err := Named("/root", bad); err == nil {
			t.Errorf("Named(%q) accepted", bad)
		}
	}
	for _, good := range []string{"himeno", "job-1", "slurm 42", "été"} {
		if err := ValidName(good); err != nil {
			t.Errorf("ValidName(%q) = %v", good, err)
		}
	}
}

func TestDefaultNameSeparatesConfigurations(t *testing.T) {
	none := func(string) string { return "" }
	base := testSpec()
	name := base.DefaultName(none)
	if !strings.HasPrefix(name, "app-") || ValidName(name) != nil {
		t.Fatalf("default name %q: want app-HASH, a valid name", name)
	}
	if again := testSpec().DefaultName(none); again != name {
		t.Errorf("the same job got %q and %q", name, again)
	}
	for what, mod := range map[string]func(*Spec){
		"-n":           func(s *Spec) { s.Ranks = 2 },
		"--nodes":      func(s *Spec) { s.Nodes = 4 },
		"--redundancy": func(s *Spec) { s.Redundancy = "partner" },
		"--shared":     func(s *Spec) { s.Shared = "/lustre/x" },
		"args":         func(s *Spec) { s.Args = []string{"--size", "m"} },
		"args split":   func(s *Spec) { s.Args = []string{"--size s"} },
		"program":      func(s *Spec) { s.Program = "/usr/bin/app" },
	} {
		s := testSpec()
		mod(&s)
		if s.DefaultName(none) == name {
			t.Errorf("a job differing in %s got the same name %q", what, name)
		}
	}
	slurm := base.DefaultName(func(k string) string {
		if k == "SLURM_JOB_NAME" {
			return "../my/run"
		}
		return ""
	})
	if !strings.HasPrefix(slurm, "_my_run-") || ValidName(slurm) != nil {
		t.Errorf("under Slurm: %q, want the job's name made safe, then the hash", slurm)
	}
	if hidden := (Spec{Program: "/x/.secret"}).DefaultName(none); ValidName(hidden) != nil {
		t.Errorf("%q is not a valid name", hidden)
	}
}

func TestSecondRunRefusedNamingPID(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	pid, running, err := d.Holder()
	if err != nil || !running || pid != os.Getpid() {
		t.Fatalf("Holder() = %d, %v, %v; want running by pid %d", pid, running, err, os.Getpid())
	}
	_, err = d.Acquire(testSpec())
	var re *RunningError
	if !errors.As(err, &re) || re.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second Acquire: %v; want a RunningError naming pid %d", err, os.Getpid())
	}
	l.Release()
	if _, running, _ := d.Holder(); running {
		t.Fatal("Holder says running after Release")
	}
	l, err = d.Acquire(testSpec())
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l.Release()
}

func TestOtherConfigurationRefused(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(d.Path, "node0", "c1")
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	l.Release()
	other := testSpec()
	other.Ranks = 2
	if _, err := d.Acquire(other); !errors.Is(err, ErrOtherSpec) || !strings.Contains(err.Error(), "-n 4 --nodes 2") {
		t.Fatalf("Acquire with -n 2: %v; want ErrOtherSpec naming the recorded -n 4 --nodes 2", err)
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("the other configuration's checkpoint is gone: %v", err)
	}
	if _, running, _ := d.Holder(); running {
		t.Error("a refused Acquire kept the lock")
	}
}

// Node caches with no recorded configuration (an earlier ckpt's, or put
// there by hand) are not adopted: the job would restore them, and delete
// them when it finished. A preflight probe left by a run that died does
// not make a directory foreign.
func TestUnrecordedCachesNotAdopted(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	ckpt := filepath.Join(d.Path, "node1", "c1")
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	// Nor do the temp files of a status being written while a second run
	// looks (the first run's tracker writes it every 50ms).
	for _, f := range []string{PreflightPrefix + "123", ".status.json.3639709853.tmp", ".job.json.42.tmp"} {
		if err := os.WriteFile(filepath.Join(d.Path, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Acquire(testSpec()); !errors.Is(err, ErrOtherSpec) || !strings.Contains(err.Error(), "unknown configuration") {
		t.Fatalf("Acquire over unrecorded caches: %v, want ErrOtherSpec (unknown configuration)", err)
	}
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("the unrecorded checkpoint is gone: %v", err)
	}
	// Empty node directories (a job that made nothing yet) are adopted.
	if err := os.RemoveAll(ckpt); err != nil {
		t.Fatal(err)
	}
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatalf("Acquire over an empty node directory and a stale probe: %v", err)
	}
	l.Release()
}

func TestForeignDirectoryNotAdopted(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "thesis.tex")
	if err := os.WriteFile(precious, []byte("years"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := At(dir).Acquire(testSpec()); !errors.Is(err, ErrNotJobDir) {
		t.Fatalf("Acquire of a directory with foreign files: %v, want ErrNotJobDir", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the refused directory now holds %d entries, want only its own file", len(entries))
	}
}

func TestRemoveOnlyOwn(t *testing.T) {
	root := t.TempDir()
	d := At(filepath.Join(root, "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"node0/c1/data", "node1/c1/data", "staging/journal"} {
		os.MkdirAll(filepath.Dir(filepath.Join(d.Path, p)), 0o755)
		os.WriteFile(filepath.Join(d.Path, p), []byte("x"), 0o644)
	}
	d.WriteStatus(Status{Job: "job"})
	foreign := filepath.Join(d.Path, "node7") // not a node of this job
	os.MkdirAll(foreign, 0o755)
	l.Remove()
	entries, _ := os.ReadDir(d.Path)
	if len(entries) != 1 || entries[0].Name() != "node7" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("after Remove the directory holds %v, want only node7, which the job did not make", names)
	}
	os.Remove(foreign)
	l, err = d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	l.Remove()
	if d.Exists() {
		t.Error("an emptied job directory stayed")
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("the root went too: %v", err)
	}
}

func TestStaleRequestsVoid(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if err := d.Request(HaltFile); err != nil {
		t.Fatal(err)
	}
	if err := d.Request("../escape"); err == nil {
		t.Error("Request of a file that is no request accepted")
	}
	l, err = d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if d.Pending(HaltFile) {
		t.Error("a halt left for an earlier run survived into this one")
	}
	d.Request(CheckpointFile)
	if !d.Take(CheckpointFile) || d.Take(CheckpointFile) {
		t.Error("a request is taken exactly once")
	}
}

func TestListJobs(t *testing.T) {
	root := t.TempDir()
	if _, err := List(filepath.Join(root, "missing")); !os.IsNotExist(err) {
		t.Errorf("List of a missing root: %v, want not-exist", err)
	}
	for _, n := range []string{"b", "a"} {
		l, err := At(filepath.Join(root, n)).Acquire(testSpec())
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
	}
	os.MkdirAll(filepath.Join(root, "not-a-job"), 0o755)
	jobs, err := List(root)
	if err != nil || len(jobs) != 2 || jobs[0].Name != "a" || jobs[1].Name != "b" {
		t.Errorf("List = %v, %v; want jobs a and b", jobs, err)
	}
}

// TestLockReleasedOnKill kills a process holding a job's lock with
// SIGKILL: the job is no longer running and can be started again.
func TestLockReleasedOnKill(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("LOUD SKIP: job locks use flock(2), which this system lacks")
	}
	d := At(filepath.Join(t.TempDir(), "job"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+d.Path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // the helper prints once it holds the lock (or fails)
	if !strings.HasPrefix(string(buf[:n]), "locked") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q", buf[:n])
	}
	pid, running, err := d.Holder()
	if err != nil || !running || pid != cmd.Process.Pid {
		t.Fatalf("Holder() = %d, %v, %v; want running by the helper, pid %d", pid, running, err, cmd.Process.Pid)
	}
	if _, err := d.Acquire(testSpec()); !strings.Contains(fmt.Sprint(err), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("Acquire while the helper holds the lock: %v; want a refusal naming pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the killed helper did not exit within a minute")
	}
	if _, running, _ := d.Holder(); running {
		t.Fatal("the lock of a killed process is still held")
	}
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	l.Release()
}

// The job's own files are published by local.WriteFile: whole, with the
// mode they always had (0600), and without a temp file left beside them.
func TestFilesWrittenWhole(t *testing.T) {
	d := At(filepath.Join(t.TempDir(), "job"))
	l, err := d.Acquire(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := d.WriteStatus(Status{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadStatus(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{SpecFile, StatusFile} {
		fi, err := os.Stat(filepath.Join(d.Path, f))
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file %s left in the job directory", e.Name())
		}
	}
}

// CheckWritable accepts a writable directory, or one that could be made,
// and leaves nothing there; a file, or a path under a file, is refused.
func TestCheckWritable(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{root, filepath.Join(root, "new", "deeper")} {
		if err := CheckWritable(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("CheckWritable left %d entries, want only the file", len(ents))
	}
	for dir, want := range map[string]string{file: "is a file, not a directory", filepath.Join(file, "sub"): "cannot be made: " + file + " is a file"} {
		if err := CheckWritable(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dir, err, want)
		}
	}
}
