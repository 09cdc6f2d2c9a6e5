package launch

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Exit statuses by which a rank tells the launcher what a relaunch can do
// (jobenv's, the values of sysexits.h).
const (
	// ExitConfig: the job's configuration is wrong; the launcher gives up
	// at once.
	ExitConfig = jobenv.ExitConfig
	// ExitJobFailed: the rank stopped because the job failed elsewhere; a
	// symptom, never the cause.
	ExitJobFailed = jobenv.ExitJobFailed
	// ExitCannotServe: a rank restarted alone (Config.Uncoordinated)
	// cannot recover from its own checkpoint and log; a failure, which
	// the whole job's relaunch serves.
	ExitCannotServe = jobenv.ExitCannotServe
)

// Classes of an attempt's end.
const (
	ClassFinished    = ""            // every rank left
	ClassFailure     = "failure"     // a failure a relaunch recovers from
	ClassConfig      = "config"      // a configuration error: give up
	ClassApplication = "application" // the program failed on its own
	ClassStopped     = "stopped"     // the launcher was told to stop (signal)
)

// RankExit is how one rank's process ended, as the launcher saw it.
type RankExit struct {
	Rank int
	Node string
	// Launcher names the launcher (mpirun, srun) when the end is its
	// process's, which ran every rank (Rank is then -1): its status is
	// that of the rank that failed first, a signal as 128+N.
	Launcher string
	// Status is the exit status, or -1 if a signal ended the process.
	Status int
	Signal syscall.Signal // the signal that ended it, if Status is -1
	// Killed: the launcher itself had sent the rank a fatal signal (the
	// attempt had failed already, or a failure was injected into it).
	Killed bool
	// Last is the rank's last line of output: usually its error message.
	Last string
}

// ok reports a clean exit.
func (e RankExit) ok() bool { return e.Status == 0 }

// crash reports a signal that the program raised itself (a fault or an
// abort), as opposed to one sent from outside (SIGKILL by the kernel's
// OOM killer, an operator's kill).
func (e RankExit) crash() bool {
	return e.Status == -1 && crashSignals[e.Signal]
}

func (e RankExit) String() string {
	who := fmt.Sprintf("rank %d", e.Rank)
	if e.Launcher != "" {
		who = e.Launcher + " (all ranks)"
	}
	if e.Node != "" {
		who += fmt.Sprintf(" (node %s)", e.Node)
	}
	var how string
	switch {
	case e.Status == -1:
		how = "killed by signal " + signalName(e.Signal)
	case e.Status == ExitConfig:
		how = fmt.Sprintf("exited with status %d (configuration error)", e.Status)
	default:
		how = fmt.Sprintf("exited with status %d", e.Status)
	}
	s := who + " " + how
	if e.Last != "" {
		s += ": " + e.Last
	}
	return s
}

// Seen is what the launcher saw of one attempt that did not finish.
type Seen struct {
	// Exits are the ranks' ends, in the order the launcher saw them.
	Exits []RankExit
	// Injected describes the failure injected into the attempt ("" if
	// none).
	Injected string
	// Symptom is how the attempt was first seen to fail (the
	// coordinator's abort reason, a rank's exit), for when nothing better
	// explains it.
	Symptom string
	// Stopped: the launcher was asked to stop (a signal, a cancelled
	// context).
	Stopped bool
	// Committed counts the checkpoints this attempt committed; Restored
	// says it restored one.
	Committed int
	Restored  bool
	// Checkpointed: an earlier attempt of this job committed a checkpoint.
	Checkpointed bool
	// PrevApplication: the attempt before this one ended in an
	// application error too.
	PrevApplication bool
	// Joined counts the ranks that joined the attempt (the coordinator
	// saw them, or they published where they run, jobenv.KeyProc);
	// JoinsKnown says that count is known.
	Joined     int
	JoinsKnown bool
}

// Verdict is what to do after an attempt.
type Verdict struct {
	Class    string
	Relaunch bool
	// Cause is the first real cause, in words: the rank that failed first
	// on its own, with its status and its last line of output, rather than
	// the other ranks' "connection closed before leave".
	Cause string
	// Why says why a relaunch cannot help ("" when relaunching).
	Why string
}

// Classify decides whether a relaunch can fix what ended an attempt. It
// is pure: every input is in s.
//
//   - A rank that exited with ExitConfig: a configuration error; give up.
//   - The launcher's own process (mpirun, srun) that exited non-zero
//     (other than ExitJobFailed, its ranks' status passed on) before any
//     rank joined: its command line or its environment is wrong (an unknown option in --launcher-args, no allocation); give
//     up, as for a configuration error.
//   - A rank killed from outside (SIGKILL, SIGTERM, not by the launcher),
//     or an injected failure: a failure; relaunch.
//   - A rank that exited non-zero (other than ExitJobFailed) or crashed
//     on its own: an application error. A relaunch repeats it when there
//     is nothing to resume from (no checkpoint committed or restored in
//     the job) or when the last relaunch ended the same way without a new
//     checkpoint: give up; else relaunch, from the newer checkpoint.
//   - A rank restarted alone that exited with ExitCannotServe: its own
//     checkpoint and log cannot serve (Config.Uncoordinated); a failure,
//     which the whole job's relaunch serves.
//   - Otherwise (a hung rank's heartbeat timeout, a lost coordinator,
//     ranks that only reported the job's failure): a failure; relaunch.
func Classify(s Seen) Verdict {
	if s.Stopped {
		return Verdict{Class: ClassStopped, Cause: s.Symptom, Why: "stopped"}
	}
	var external, app, cannot *RankExit
	for i := range s.Exits {
		e := &s.Exits[i]
		switch {
		case e.ok() || e.Killed && e.Status == -1:
			// A status is the rank's own doing even if the launcher had
			// signalled it since; a signal it sent is not.
		case e.Status == ExitConfig:
			return Verdict{Class: ClassConfig, Cause: e.String(),
				Why: "a configuration error: a relaunch would fail the same way"}
		case e.Launcher != "" && e.Status > 0 && e.Status != ExitJobFailed && s.JoinsKnown && s.Joined == 0 && s.Injected == "":
			// ExitJobFailed passed on by the launcher is its ranks' own:
			// they reached the coordinator and were told the job failed
			// (a join timeout that came before they could join, on a
			// loaded machine), so its command line was not at fault.
			return Verdict{Class: ClassConfig, Cause: e.String(),
				Why: e.Launcher + " failed before any rank joined: its arguments or its environment are wrong, and a relaunch would fail the same way"}
		case e.Status == -1 && !e.crash():
			if external == nil {
				external = e
			}
		case e.Status == ExitJobFailed:
		case e.Status == ExitCannotServe:
			if cannot == nil {
				cannot = e
			}
		default:
			if app == nil {
				app = e
			}
		}
	}
	switch {
	case s.Injected != "":
		return Verdict{Class: ClassFailure, Relaunch: true, Cause: s.Injected}
	case external != nil:
		return Verdict{Class: ClassFailure, Relaunch: true, Cause: external.String()}
	case app != nil:
		v := Verdict{Class: ClassApplication, Relaunch: true, Cause: app.String()}
		switch {
		case s.Committed == 0 && !s.Restored && !s.Checkpointed:
			v.Relaunch, v.Why = false, "the program failed before its first checkpoint: a relaunch would start from scratch and fail the same way"
		case s.Committed == 0 && s.PrevApplication:
			v.Relaunch, v.Why = false, "the program failed twice from the same checkpoint without progress"
		}
		return v
	case cannot != nil:
		return Verdict{Class: ClassFailure, Relaunch: true, Cause: cannot.String() + ": its checkpoint and message log cannot serve a recovery alone"}
	}
	return Verdict{Class: ClassFailure, Relaunch: true, Cause: s.Symptom}
}

// Backoff spaces relaunches: the first waits Initial, each next one twice
// as long up to Max; an attempt that made progress (committed a
// checkpoint) starts the sequence again. A program that keeps failing
// then costs a few relaunches a minute, not hundreds a second.
type Backoff struct {
	Initial, Max time.Duration
	next         time.Duration
}

// Next is the wait before the next relaunch, after an attempt that made
// progress or not.
func (b *Backoff) Next(progress bool) time.Duration {
	if progress || b.next == 0 {
		b.next = b.Initial
	}
	d := min(b.next, b.Max)
	b.next = min(2*b.next, b.Max)
	return d
}

// signalName is SIGKILL for syscall.SIGKILL.
func signalName(s syscall.Signal) string {
	for n, v := range signalNames {
		if v == s {
			return "SIG" + n
		}
	}
	return fmt.Sprintf("%d (%s)", int(s), s)
}

// ParseSignal reads a signal's name (USR1, SIGUSR1, any case) or number.
func ParseSignal(text string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(text))
	t = strings.TrimPrefix(t, "SIG")
	if v, ok := signalNames[t]; ok {
		if uncatchable[v] {
			return 0, fmt.Errorf("signal %s cannot be caught", signalName(v))
		}
		return v, nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(text)); err == nil && n > 0 && n < 65 {
		s := syscall.Signal(n)
		if uncatchable[s] {
			return 0, fmt.Errorf("signal %s cannot be caught", signalName(s))
		}
		return s, nil
	}
	return 0, fmt.Errorf("signal %q: want a name such as USR1 or SIGUSR1, or a number", text)
}

// SignalName is the conventional name of s (SIGTERM).
func SignalName(s syscall.Signal) string { return signalName(s) }
