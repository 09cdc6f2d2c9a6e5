package logstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/zeebo/xxh3"
)

// writerEnv names the log a re-executed test binary appends to as the
// killed writer of TestFileNoSyncKilledWriter (not a CKPT_ variable: the
// test's own).
const writerEnv = "LOGSTORE_TEST_KILLED_WRITER"

// writerRecords bounds the writer's appends (it then waits to be killed),
// writerData is each record's size: large, so that a kill often lands
// inside a write (Linux stops a large write at a fatal signal, leaving a
// torn frame in the page cache).
const (
	writerRecords = 48
	writerData    = 1 << 20
)

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		killedWriter(path)
		return
	}
	os.Exit(m.Run())
}

// recordData is record i's data: what the checker expects back.
func recordData(i uint64) []byte {
	b := make([]byte, writerData)
	for o := 0; o < len(b); o += 8 {
		v := xxh3.Hash(strconv.AppendUint(strconv.AppendInt(nil, int64(o), 10), i, 10))
		for k := range 8 {
			b[o+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// killedWriter appends records 1, 2, … to an unsynced log at path and
// prints each index once Append returned for it (the record is durable as
// far as the writer knows), then waits to be killed.
func killedWriter(path string) {
	l, err := logstore.OpenFileWith(path, logstore.FileOptions{NoSync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := uint64(1); i <= writerRecords; i++ {
		d := recordData(i)
		if err := l.Append([]msglog.Record{{Index: i, From: 1, Seq: i, Data: d, Sum: msglog.Hash(i, 1, i, d)}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(i)
	}
	select {} // killed here at the latest
}

// A log that is not synced (process durability) loses nothing its writer
// was told durable when the writer is killed: a real process, killed with
// SIGKILL in the middle of its appends. Every record it reported is read
// back whole and in order; what follows is at most whole records it did
// not live to report, and a frame the kill cut is dropped as a torn tail,
// after which the log takes appends again.
func TestFileNoSyncKilledWriter(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rank-1.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var told uint64
	for sc.Scan() {
		if told, err = strconv.ParseUint(sc.Text(), 10, 64); err != nil {
			t.Fatalf("writer said %q", sc.Text())
		}
		if told == 3 {
			// Mid-appends: the writer is writing record 4 or later.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Lines printed before the kill are records told durable too.
	werr := cmd.Wait()
	if told < 3 {
		t.Fatalf("the writer stopped after %d records: %v\n%s", told, werr, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("the writer was not killed by a signal: %v\n%s", werr, stderr.String())
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	l, err := logstore.OpenFileWith(path, logstore.FileOptions{NoSync: true})
	if err != nil {
		t.Fatalf("reopening the killed writer's log: %v", err)
	}
	defer l.Close()
	var next uint64 = 1
	if err := l.ReadAfter(0, func(r msglog.Record) error {
		if r.Index != next || r.From != 1 || r.Seq != next {
			return fmt.Errorf("record %d/%d/%d, want index %d", r.Index, r.From, r.Seq, next)
		}
		if err := r.Verify(); err != nil {
			return err
		}
		if !bytes.Equal(r.Data, recordData(next)) {
			return fmt.Errorf("record %d's data differs", next)
		}
		next++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	last := next - 1
	if last < told {
		t.Fatalf("the log holds records up to %d, the writer was told %d was durable", last, told)
	}
	frame := int64(24 + 40 + writerData) // header, then frames of one size
	want := 24 + int64(last)*(frame-24)
	if l.TornBytes != st.Size()-want {
		t.Fatalf("file of %d bytes, %d records (%d bytes): %d torn bytes dropped, want %d", st.Size(), last, want, l.TornBytes, st.Size()-want)
	}
	t.Logf("writer told %d durable, killed; %d records back, a torn tail of %d bytes dropped", told, last, l.TornBytes)
	d := []byte("after")
	n := last + 1
	if err := l.Append([]msglog.Record{{Index: n, From: 1, Seq: n, Data: d, Sum: msglog.Hash(n, 1, n, d)}}); err != nil {
		t.Fatalf("appending after the torn tail: %v", err)
	}
	if _, got, err := l.Bounds(); err != nil || got != n {
		t.Fatalf("after an append: last %d, %v; want %d", got, err, n)
	}
}
