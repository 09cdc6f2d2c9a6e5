package jobdir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// RunningError is Acquire's error when the job runs already.
type RunningError struct {
	Dir Dir
	PID int // 0 if the holder had not written it yet
}

func (e *RunningError) Error() string {
	pid := "its PID not yet written"
	if e.PID > 0 {
		pid = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("job %s is running already (%s holds %s); wait for it to end, or stop it with 'ckpt halt --cache-root %s'",
		e.Dir.Name, pid, e.Dir.file(LockFile), e.Dir.Path)
}

// Lock is a running job's hold on its directory.
type Lock struct {
	d    Dir
	f    *os.File
	spec Spec
}

// lockWait is how long Acquire retries a lock that is held: a probe
// (Holder) holds it for an instant, a running job for its whole run.
const lockWait = time.Second

// Acquire makes the job's directory if it does not exist, takes its lock,
// writes this process's PID in it, and records spec as the configuration
// of the directory's checkpoints. It refuses a job that runs already
// (*RunningError), a directory that records another configuration
// (ErrOtherSpec), and an existing directory holding files no job made
// (ErrNotJobDir): a job never adopts, and so never deletes, what is not
// its own.
func (d Dir) Acquire(spec Spec) (*Lock, error) {
	if d.Exists() {
		if err := d.checkAdoptable(); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(d.Path, dirMode); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		f, busy, err := d.tryAcquire()
		if err != nil {
			return nil, err
		}
		if !busy {
			l := &Lock{d: d, f: f, spec: spec}
			if err := d.checkSpec(spec); err != nil {
				l.Release()
				return nil, err
			}
			// Requests left for a run that has ended are void: this
			// run must not halt because its predecessor was asked to.
			d.Take(HaltFile)
			d.Take(CheckpointFile)
			return l, nil
		}
		if time.Now().After(deadline) {
			pid, _ := readPID(d.file(LockFile))
			return nil, &RunningError{Dir: d, PID: pid}
		}
		time.Sleep(20 * time.Millisecond) // a probe's instant, or the holder's whole run
	}
}

// tryAcquire takes the lock once: f is the locked file, or busy.
func (d Dir) tryAcquire() (f *os.File, busy bool, err error) {
	path := d.file(LockFile)
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
		if err != nil {
			if os.IsNotExist(err) {
				// The directory went with a job that just finished.
				if err := os.MkdirAll(d.Path, dirMode); err != nil {
					return nil, false, err
				}
				continue
			}
			return nil, false, err
		}
		busy, err := tryLock(f, true)
		if err != nil || busy {
			f.Close()
			return nil, busy, err
		}
		if !sameFile(f, path) {
			// Its job unlinked it as it finished: lock the new one.
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			f.Close()
			return nil, false, err
		}
		return f, false, nil
	}
	return nil, false, fmt.Errorf("%s: the lock file keeps changing", path)
}

// Dir is the locked directory.
func (l *Lock) Dir() Dir { return l.d }

// Release lets the job go, leaving its directory (its checkpoints, for a
// later run to resume from).
func (l *Lock) Release() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// Remove deletes what the job made (its node caches, staging journals and
// files; nothing else) and the directory if that leaves it empty, then
// lets the job go. The lock file goes while still locked: a run waiting
// for it sees it was replaced and locks the new one.
func (l *Lock) Remove() {
	if l.f == nil {
		return
	}
	l.d.removeOwn(l.spec)
	os.Remove(l.d.file(LockFile))
	l.Release()
	os.Remove(l.d.Path) // fails, as it should, if anything else is left
}

// Holder says whether the job runs (its lock is held) and the PID the
// holder wrote. A directory without a lock file has no job running.
func (d Dir) Holder() (pid int, running bool, err error) {
	f, err := os.Open(d.file(LockFile))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	busy, err := tryLock(f, false)
	if err != nil {
		return 0, false, err
	}
	if !busy {
		unlock(f)
		return 0, false, nil
	}
	pid, _ = readPID(d.file(LockFile))
	return pid, true, nil
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, errors.New("no PID in the lock file")
	}
	return pid, nil
}
