package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/launch"
)

// jobSignals turns the signals 'ckpt run' receives into the job's end:
// the first SIGINT, SIGTERM or --signal asks the job to checkpoint and
// stop (as 'ckpt halt' does) within the grace time, after which, or at a
// second signal, its ranks are killed. Either way every process of the job
// is killed and reaped before 'ckpt run' exits: none is left running.
type jobSignals struct {
	stop   chan struct{} // closed at the first signal: launch.Config.Stop
	cancel context.CancelFunc
	ch     chan os.Signal
	done   chan struct{}
	halt   os.Signal // the signal that means "checkpoint, then stop" only

	mu     sync.Mutex
	first  os.Signal // the first signal received, nil if none
	killed string    // why the ranks were killed, "" if they were not
}

// watchSignals starts watching; close it with stopWatching. The returned
// context is cancelled when the job is to be killed.
func watchSignals(parent context.Context, log io.Writer, grace time.Duration, halt os.Signal) (context.Context, *jobSignals) {
	ctx, cancel := context.WithCancel(parent)
	js := &jobSignals{stop: make(chan struct{}), cancel: cancel, ch: make(chan os.Signal, 4),
		done: make(chan struct{}), halt: halt}
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if halt != nil {
		sigs = append(sigs, halt)
	}
	signal.Notify(js.ch, sigs...)
	go js.loop(ctx, log, grace)
	return ctx, js
}

func (js *jobSignals) loop(ctx context.Context, log io.Writer, grace time.Duration) {
	defer close(js.done)
	var timeout <-chan time.Time
	for {
		select {
		case sig := <-js.ch:
			js.mu.Lock()
			first := js.first == nil
			if first {
				js.first = sig
			} else {
				js.killed = "a second signal"
			}
			js.mu.Unlock()
			if first {
				fmt.Fprintf(log, "ckpt run: %s: asking the job to checkpoint and stop (its ranks are killed after %s, or at a second signal)\n",
					sigName(sig), sec(grace.Seconds()))
				close(js.stop)
				t := time.NewTimer(grace)
				defer t.Stop()
				timeout = t.C
				continue
			}
			fmt.Fprintf(log, "ckpt run: %s again: killing the job's ranks now\n", sigName(sig))
			js.cancel()
			return
		case <-timeout:
			js.mu.Lock()
			js.killed = fmt.Sprintf("no clean stop within %s", sec(grace.Seconds()))
			js.mu.Unlock()
			fmt.Fprintf(log, "ckpt run: the job did not stop within %s: killing its ranks\n", sec(grace.Seconds()))
			js.cancel()
			return
		case <-ctx.Done():
			return
		}
	}
}

// stopWatching restores the signals' default actions.
func (js *jobSignals) stopWatching() {
	signal.Stop(js.ch)
	js.cancel()
	<-js.done
}

// received is the first signal and why the ranks were killed ("" if the
// job stopped on its own).
func (js *jobSignals) received() (os.Signal, string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.first, js.killed
}

// signalEnd is what 'ckpt run' reports and exits with after a signal:
// 128+N, the shell's convention, unless the signal was --signal's and the
// job checkpointed and stopped cleanly (a planned stop, such as Slurm's
// warning before the time limit): then 0.
func signalEnd(sig os.Signal, halt os.Signal, killed string, res runResult, runErr error, cacheRoot string) (msg string, err error) {
	n := 0
	if s, ok := sig.(syscall.Signal); ok {
		n = int(s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stopped by %s", sigName(sig))
	clean := runErr == nil && res.Halted
	switch {
	case clean:
		b.WriteString(": the job checkpointed and stopped")
	case killed != "":
		fmt.Fprintf(&b, ": ranks killed (%s)", killed)
	case runErr != nil:
		fmt.Fprintf(&b, ": %v", runErr)
	}
	if res.Result != "" && !clean {
		fmt.Fprintf(&b, "; result %q", res.Result)
	}
	if res.Checkpoint != "" {
		fmt.Fprintf(&b, "; run the same command again to resume from checkpoint %s (caches in %s)", res.Checkpoint, cacheRoot)
	} else {
		fmt.Fprintf(&b, "; no checkpoint was taken: the same command starts again from scratch (caches in %s)", cacheRoot)
	}
	if clean && halt != nil && sig == halt {
		return b.String(), nil
	}
	return b.String(), statusError{err: fmt.Errorf("%s", b.String()), status: 128 + n}
}

// sigName is SIGTERM for syscall.SIGTERM.
func sigName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		return launch.SignalName(n)
	}
	return s.String()
}

// signalFlags reads --signal and --halt-timeout.
func signalFlags(name string, timeout *quantity) (os.Signal, time.Duration, error) {
	grace := 60 * time.Second
	if timeout.set {
		if timeout.v <= 0 {
			return nil, 0, usagef("--halt-timeout %gs: need a positive duration such as 60s", timeout.v)
		}
		grace = time.Duration(timeout.v * float64(time.Second))
	}
	if name == "" {
		return nil, grace, nil
	}
	if strings.Contains(name, "@") {
		return nil, 0, usagef("--signal %s: give the signal alone (%s); the time before the limit is the scheduler's (sbatch --signal=%s)",
			name, strings.SplitN(name, "@", 2)[0], name)
	}
	s, err := launch.ParseSignal(name)
	if err != nil {
		return nil, 0, usagef("--signal %s: %v", name, err)
	}
	return s, grace, nil
}

// nullIfEmpty is JSON null for "".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
