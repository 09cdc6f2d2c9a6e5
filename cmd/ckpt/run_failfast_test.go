package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/launch"
)

// What every rank would find out for itself is checked before anything
// is launched: exit status 2, one line naming the flag and the value.
func TestRunPreflight(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("MINIO_ROOT_USER", "")
	for _, tc := range []struct {
		mention []string
		args    []string
	}{
		{[]string{"--redundancy xor:9", "4 nodes"}, []string{"run", "-n", "4", "--redundancy", "xor:9", "--", "true"}},
		{[]string{"--redundancy partner"}, []string{"run", "-n", "4", "--nodes", "1", "--redundancy", "partner", "--", "true"}},
		{[]string{"--shared " + file, "not a directory"}, []string{"run", "-n", "2", "--shared", file, "--", "true"}},
		{[]string{"--shared " + filepath.Join(file, "sub"), "is a file"}, []string{"run", "-n", "2", "--shared", filepath.Join(file, "sub"), "--", "true"}},
		{[]string{"--cache-root " + file}, []string{"run", "-n", "2", "--cache-root", file, "--", "true"}},
		{[]string{"--shared s3://bucket/job", "no credentials", "AWS_ACCESS_KEY_ID"}, []string{"run", "-n", "2", "--shared", "s3://bucket/job", "--", "true"}},
		{[]string{"--signal USR9"}, []string{"run", "-n", "2", "--signal", "USR9", "--", "true"}},
		{[]string{"--signal KILL", "cannot be caught"}, []string{"run", "-n", "2", "--signal", "KILL", "--", "true"}},
		{[]string{"--signal USR1@60", "sbatch"}, []string{"run", "-n", "2", "--signal", "USR1@60", "--", "true"}},
		{[]string{"--halt-timeout"}, []string{"run", "-n", "2", "--halt-timeout", "0", "--", "true"}},
	} {
		checkBadInput(t, tc.mention, tc.args...)
	}
	t.Run("unwritable shared directory", func(t *testing.T) {
		ro := filepath.Join(dir, "read-only")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if f, err := os.CreateTemp(ro, "probe"); err == nil {
			f.Close()
			// Root writes through permissions; no one makes files in
			// /proc, which is a directory all the same.
			if runtime.GOOS != "linux" {
				t.Skip("SKIPPED: this user can write to a mode 0555 directory (root?) and there is no /proc: an unwritable --shared cannot be made here")
			}
			ro = "/proc"
		}
		checkBadInput(t, []string{"--shared " + filepath.Join(ro, "job"), "not writable"}, "run", "-n", "2", "--shared", filepath.Join(ro, "job"), "--", "true")
		checkBadInput(t, []string{"--shared " + ro, "not writable"}, "run", "-n", "2", "--shared", ro, "--", "true")
	})
	// The checks make nothing.
	if _, err := os.Stat(filepath.Join(dir, "job")); !os.IsNotExist(err) {
		t.Errorf("preflight made a directory: %v", err)
	}
}

// A rank's configuration error (Himeno's grid too small for the ranks)
// ends the job at the first attempt, with the rank's own message in the
// error and in run --json's "error".
func TestRunGivesUpOnConfigurationError(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "run", "-n", "4", "--nodes", "2", "--retries", "10", "--json",
		"--cache-root", filepath.Join(t.TempDir(), "c"), "--", exe, "example", "himeno", "--size", "6x8x8")
	if code != exitError {
		t.Fatalf("exit %d, want %d\n%s", code, exitError, stderr)
	}
	obj := decodeOne(t, stdout)
	if getNum(t, obj, "attempts") != 1 {
		t.Errorf("%v attempts, want 1: a configuration error is not relaunched\n%s", obj["attempts"], stderr)
	}
	msg, _ := obj["error"].(string)
	for _, want := range []string{"status 78", "too few for 4 ranks", "configuration error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	last := stderr[strings.LastIndex(strings.TrimSuffix(stderr, "\n"), "\n")+1:]
	if !strings.HasPrefix(last, "ckpt: ") || !strings.Contains(last, "too few for 4 ranks") || strings.Contains(last, "connection closed before leave") {
		t.Errorf("last line %q: want the rank's cause, not the others' symptom", last)
	}
}

// A program that fails before its first checkpoint is launched once, not
// eleven times.
func TestRunGivesUpOnFailingProgram(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "run", "-n", "2", "--retries", "10", "--json",
		"--cache-root", filepath.Join(t.TempDir(), "c"), "--", exe, "example", "himeno", "--size", "bogus")
	if code != exitError {
		t.Fatalf("exit %d, want %d\n%s", code, exitError, stderr)
	}
	obj := decodeOne(t, stdout)
	if getNum(t, obj, "attempts") != 1 {
		t.Errorf("%v attempts, want 1\n%s", obj["attempts"], stderr)
	}
	if msg, _ := obj["error"].(string); !strings.Contains(msg, "before its first checkpoint") || !strings.Contains(msg, "--size") {
		t.Errorf("error %q: want the rank's --size complaint, before the first checkpoint", msg)
	}
}

// A job that finished has a null "error".
func TestRunJSONErrorNullWhenFinished(t *testing.T) {
	t.Setenv(asCkpt, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "run", "-n", "2", "--json", "--cache-root", filepath.Join(t.TempDir(), "c"),
		"--", exe, "example", "himeno", "--size", "xs", "--iterations", "20")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	obj := decodeOne(t, stdout)
	if v, ok := obj["error"]; !ok || v != nil {
		t.Errorf("error = %v (present %v), want null", v, ok)
	}
	if obj["result"] == "" {
		t.Errorf("no result")
	}
}

// A failure's progress line tells its cause once: an injected failure's
// reason already starts with it; a symptom that hides the cause gets it.
func TestFailDetailTellsTheCauseOnce(t *testing.T) {
	injected := launch.Event{Kind: "fail",
		Reason: "injected failure: node 1 lost with its cache (seen as: rank 1 (node node0): connection closed before leave)",
		Cause:  "injected failure: node 1 lost with its cache"}
	if got := describe(injected); strings.Count(got, "node 1 lost") != 1 {
		t.Errorf("injected failure told twice: %q", got)
	}
	hidden := launch.Event{Kind: "fail", Reason: "rank 1 (node node0): connection closed before leave",
		Cause: "rank 3 (node node1) exited with status 78", Class: launch.ClassConfig}
	if got := describe(hidden); !strings.Contains(got, "; cause: rank 3 (node node1) exited with status 78") || !strings.HasSuffix(got, "; not relaunched") {
		t.Errorf("symptom without its cause: %q", got)
	}
}
