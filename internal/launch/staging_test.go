package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeStage is a staging server stand-in: it counts its starts in its
// directory, fails its second start (as a restart does while the port is
// not yet free), and otherwise reports its address and waits.
const fakeStage = `#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --addr-file) F=$2; shift;; --listen) L=$2; shift;; esac; shift; done
D=$(dirname "$F")
n=$(cat "$D/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$D/count"
echo "start $n" >> "$D/log"
if [ "$n" = 2 ]; then exit 1; fi
if [ "$L" = "127.0.0.1:0" ]; then L=127.0.0.1:1234; fi
echo $L > "$F"
exec sleep 30
`

// A killed server whose first restart attempt fails is started once more,
// by one supervisor: no second restart loop, no process Stop does not
// know of (it would keep Stop waiting).
func TestStagingRestartAfterFailedAttempt(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-stage.sh")
	if err := os.WriteFile(script, []byte(fakeStage), 0o755); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(dir, "staging")
	s, err := StartStaging(StagingConfig{Servers: 1, Program: script, Dir: sdir, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(sdir, "log"))
		return strings.Count(string(b), "start")
	}
	if err := s.Kill(0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Restarts() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // room for a stray restart loop to show
	if n, r := starts(), s.Restarts(); n != 3 || r != 1 {
		t.Errorf("%d starts and %d restarts after one kill and one failed restart attempt, want 3 and 1", n, r)
	}
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("Stop did not return: a server it never signalled is still running")
	}
	if n := starts(); n != 3 {
		t.Errorf("%d starts by the end, want 3", n)
	}
}

// Stop while a restart is under way: the server started after Stop looked
// at the processes is killed too, and Stop returns.
func TestStagingStopDuringRestart(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-stage.sh")
	// Every restart fails: the supervisor keeps trying until Stop.
	slow := strings.Replace(fakeStage, `if [ "$n" = 2 ]; then exit 1; fi`, `if [ "$n" -ge 2 ]; then sleep 0.05; exit 1; fi`, 1)
	if err := os.WriteFile(script, []byte(slow), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := StartStaging(StagingConfig{Servers: 1, Program: script, Dir: filepath.Join(dir, "staging"), Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	s.Kill(0)
	time.Sleep(300 * time.Millisecond)
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("Stop did not return while a restart was being retried")
	}
	if r := s.Restarts(); r != 0 {
		t.Errorf("%d restarts counted, want 0 (every restart failed)", r)
	}
}

// A staging server gets the job's token in its environment, never on its
// command line, which every user of the host can read (ps).
func TestStagingTokenNotOnCommandLine(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-stage.sh")
	record := strings.Replace(fakeStage, `D=$(dirname "$F")`, `D=$(dirname "$F")
echo "$ARGS" > "$D/args"; echo "$CKPT_STAGE_TOKEN" > "$D/env"`, 1)
	record = strings.Replace(record, "while [ $# -gt 0 ]", `ARGS="$*"
while [ $# -gt 0 ]`, 1)
	if err := os.WriteFile(script, []byte(record), 0o755); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(dir, "staging")
	s, err := StartStaging(StagingConfig{Servers: 1, Program: script, Dir: sdir, Token: "s3cr3t-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	args, err := os.ReadFile(filepath.Join(sdir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(args), "s3cr3t") || strings.Contains(string(args), "--token") {
		t.Errorf("the server's command line carries the token: %q", args)
	}
	if env, err := os.ReadFile(filepath.Join(sdir, "env")); err != nil || strings.TrimSpace(string(env)) != "s3cr3t-token" {
		t.Errorf("CKPT_STAGE_TOKEN in the server's environment: %q, %v", env, err)
	}
}
