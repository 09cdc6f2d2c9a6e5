package bench

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// A clients worker that fails: the error says why, in the worker's words,
// not only its exit status.
func TestRunClientsNamesTheFailure(t *testing.T) {
	cfg := CoordConfig{Worker: func(args ...string) *exec.Cmd {
		return exec.Command("sh", "-c", `echo starting >&2; printf 'ckpt: coordnet: rank 657: waiting to be welcomed: 127.0.0.1:1 closed the connection\n\n' >&2; exit 1`)
	}}
	_, err := runClients(context.Background(), cfg.Worker, "tree", "8")
	if err == nil || !strings.Contains(err.Error(), "exit status 1: ckpt: coordnet: rank 657: waiting to be welcomed") {
		t.Fatalf("runClients of a failing worker: %v", err)
	}
}

func TestLastLine(t *testing.T) {
	var l lastLine
	for _, w := range []string{"one\ntw", "o\n", "\n", "thr"} {
		l.Write([]byte(w))
	}
	if got := l.String(); got != "thr" {
		t.Errorf("last line %q, want the unfinished %q", got, "thr")
	}
	l.Write([]byte("ee\n\n"))
	if got := l.String(); got != "three" {
		t.Errorf("last line %q, want %q", got, "three")
	}
}
