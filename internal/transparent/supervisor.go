package transparent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/tcplock"
)

// Job is what a supervisor needs of its rank's part in the job: ckpt.Job
// (through an adapter in cmd/ckpt; no internal package imports the root)
// or a fake. Every method but Rank is collective: all ranks call it, in
// the same order.
type Job interface {
	Rank() int
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
	NeedCheckpoint(ctx context.Context, step int64) (bool, error)
	// Halting says the job was asked to stop after the checkpoint
	// NeedCheckpoint just asked for.
	Halting() bool
	// Checkpoint takes checkpoint name: save writes this rank's files,
	// then the engine commits them on every rank.
	Checkpoint(ctx context.Context, name string, save func(Files) error) error
	// Restart returns the newest checkpoint the job can recover, its
	// files verified, or nil when there is none.
	Restart(ctx context.Context) (Restored, error)
	Finish(ctx context.Context, result string) error
}

// Files creates the files of this rank's part of a checkpoint.
type Files interface {
	Create(name string) (io.WriteCloser, error)
}

// Restored reads this rank's part of a restored checkpoint.
type Restored interface {
	Name() string
	Open(file string) (io.ReadCloser, error)
}

// Tree is the rank's program as it runs: a process tree the supervisor
// started or restored.
type Tree interface {
	// Pid is the tree's root, for CRIU.
	Pid() int
	// Freeze stops every process of the tree and returns once all are
	// stopped; ErrExited if the program ended first.
	Freeze(ctx context.Context) error
	// Thaw resumes the processes Freeze stopped.
	Thaw() error
	// Sync writes what the program printed so far into its output files
	// (durably) and says where they end; the tree must be frozen.
	Sync() (stdout, stderr Stream, err error)
	// Done is closed when the program ended and its output is in the
	// files; ExitCode is then its exit status (128+N after signal N).
	Done() <-chan struct{}
	ExitCode() int
	// Ends says, once Done is closed, where the output files end: a
	// checkpoint of a program that ended records it, so that a restart
	// keeps all it printed.
	Ends() (stdout, stderr Stream)
	// Kill ends the tree at once.
	Kill()
}

// fileLister is a Tree that can say which regular files its processes
// have open for writing (frozen): their sizes go into the checkpoint's
// Meta, for the restore to cut them back to.
type fileLister interface {
	OpenFiles() ([]OpenFile, error)
}

// connLister is a Tree that can list its established TCP connections
// (frozen), for Config.Net.
type connLister interface {
	Conns() ([]tcplock.Conn, error)
}

// ErrExited is returned by Tree.Freeze when the program ended before it
// could be frozen.
var ErrExited = errors.New("the program ended")

// Runner starts the rank's program, or restores it from a checkpoint.
type Runner interface {
	Start(ctx context.Context) (Tree, error)
	// Restore recreates the tree from the images in dir (with CRIU),
	// after truncating the output files to where m says they ended. CRIU
	// writes its log and statistics into work ("": into dir); dir is only
	// read (it may be a checkpoint's files in the node cache).
	Restore(ctx context.Context, dir, work string, m Meta) (Tree, error)
	// Ended sets the output files of a program that had ended at the
	// checkpoint back to where m says they ended.
	Ended(m Meta) error
}

// Config configures a supervisor.
type Config struct {
	Runner Runner
	Tool   criu.Tool
	// Scratch is a directory of the rank's own for CRIU's logs, the
	// restored images that must be decompressed for CRIU, and, when the
	// checkpoint's files are not in a directory of the node cache
	// (inplace.go), the dumps before they enter the checkpoint and the
	// restored images put together. A supervisor starts by removing what
	// one that crashed there left (dump-*, restore-*).
	Scratch string
	// Tick is how often the supervisor looks at its program and asks
	// whether to checkpoint (default 50ms): a step of the job's policy.
	Tick time.Duration
	// Net, if set, has the trees' established TCP connections dumped and
	// restored with them (CRIU's --tcp-established): the connections
	// between ranks, whose ends must come back with their addresses (the
	// ranks of a node in its network namespace, restored there). Net
	// keeps each rank's connections quiet from before any rank's dump to
	// after its own, and from before its restore until every rank's is
	// done (package tcplock). Without it, a tree with a connection fails
	// to dump.
	Net tcplock.Locker
	// Result, if set, is the job's result line that rank 0 reports when
	// every program ended (the last line its program printed, say).
	Result func() string
}

// Report is what a rank's supervisor did.
type Report struct {
	// Restored is the checkpoint the rank restarted from ("" from scratch).
	Restored    string
	RestoreTime time.Duration
	// Checkpoints counts the checkpoints taken; DumpTime is their CRIU
	// dumps' total time (the tree is stopped from the freeze to the end of
	// the dump), ImageBytes the last checkpoint's images as CRIU wrote
	// them, and Compression what the last checkpoint did with them
	// (each checkpoint's choice is in its Meta).
	Checkpoints int
	DumpTime    time.Duration
	ImageBytes  int64
	Compression Compression
	ExitCode    int
	Halted      bool
}

// ProgramError is returned by Run when the rank's program failed: the
// supervisor exits with the program's status.
type ProgramError struct{ Code int }

func (e *ProgramError) Error() string {
	return fmt.Sprintf("the program exited with status %d", e.Code)
}

// status is a rank's word in the tick's exchange: whether its program
// ended, and how.
type status struct {
	ended bool
	code  int
}

func (s status) encode() []byte {
	if !s.ended {
		return []byte{0}
	}
	return []byte{1, byte(s.code)}
}

func decodeStatus(b []byte) (status, error) {
	switch {
	case len(b) == 1 && b[0] == 0:
		return status{}, nil
	case len(b) == 2 && b[0] == 1:
		return status{ended: true, code: int(b[1])}, nil
	}
	return status{}, fmt.Errorf("transparent: bad status %x from a rank", b)
}

// supervisor is one rank's run.
type supervisor struct {
	cfg  Config
	job  Job
	tree Tree // nil once the program ended (or when it had at the checkpoint)
	end  status
	// endOut and endErr are where the output files ended when the
	// program did (end.ended).
	endOut, endErr Stream
	step           int64
	rep            Report
	// joined says that begin reached the job's restart (whose
	// collectives every rank meets), failed or not.
	joined bool
}

// Run supervises the rank's program from its start (or its restore from
// the newest checkpoint) to the end of every rank's program, checkpointing
// it when the job's policy says so. It returns the first error that ends
// the rank: a *ProgramError if the program failed.
func Run(ctx context.Context, job Job, cfg Config) (Report, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = 50 * time.Millisecond
	}
	s := &supervisor{cfg: cfg, job: job}
	defer func() {
		if s.tree != nil {
			// Killed, and waited for: its output is all in the files
			// when Run returns, for the caller to read.
			s.tree.Kill()
			<-s.tree.Done()
		}
	}()
	err := s.begin(ctx)
	if s.cfg.Net != nil && s.joined {
		// Only a rank that took part in the restart agrees on it: one
		// that failed before (its scratch, a dead supervisor's table)
		// would meet the other ranks' restart collectives out of step
		// (its agreement's gather taken as their first round); it
		// ends as without Net, and the job sees a rank fail.
		err = s.reconnect(ctx, err)
	}
	if err != nil {
		return s.rep, err
	}
	tick := time.NewTicker(cfg.Tick)
	defer tick.Stop()
	for {
		var done <-chan struct{}
		if s.tree != nil {
			done = s.tree.Done()
		}
		select {
		case <-ctx.Done():
			return s.rep, ctx.Err()
		case <-tick.C:
		case <-done:
		}
		if s.tree != nil {
			select {
			case <-s.tree.Done():
				s.ended(s.tree.ExitCode())
			default:
			}
		}
		if s.end.ended && s.end.code != 0 {
			return s.rep, &ProgramError{Code: s.end.code}
		}
		s.step++
		all, err := s.job.AllGather(ctx, s.end.encode())
		if err != nil {
			return s.rep, err
		}
		finished := true
		for _, b := range all {
			st, err := decodeStatus(b)
			if err != nil {
				return s.rep, err
			}
			finished = finished && st.ended
		}
		if finished {
			result := ""
			if s.cfg.Result != nil {
				result = s.cfg.Result()
			}
			return s.rep, s.job.Finish(ctx, result)
		}
		need, err := s.job.NeedCheckpoint(ctx, s.step)
		if err != nil {
			return s.rep, err
		}
		if need {
			if err := s.checkpoint(ctx); err != nil {
				return s.rep, err
			}
		}
		if s.job.Halting() {
			// The checkpoint just taken is the last: the job resumes
			// from it later.
			s.rep.Halted = true
			return s.rep, s.job.Finish(ctx, "")
		}
	}
}

// ended records the program's end.
func (s *supervisor) ended(code int) {
	s.endOut, s.endErr = s.tree.Ends()
	s.tree = nil
	s.end = status{ended: true, code: code}
	s.rep.ExitCode = code
}

// begin restores the rank's program from the newest checkpoint the job
// can recover, or starts it.
func (s *supervisor) begin(ctx context.Context) error {
	if err := s.clearScratch(); err != nil {
		return err
	}
	if s.cfg.Net != nil {
		// What a supervisor that died locked left.
		if err := s.cfg.Net.Unlock(); err != nil {
			return err
		}
	}
	res, err := s.job.Restart(ctx)
	s.joined = true
	if err != nil {
		return err
	}
	if res == nil {
		s.tree, err = s.cfg.Runner.Start(ctx)
		return err
	}
	start := time.Now()
	m, err := readMeta(res)
	if err != nil {
		return err
	}
	s.step, s.rep.Restored = m.Step, res.Name()
	if m.Exited {
		s.end = status{ended: true, code: m.ExitCode}
		s.endOut, s.endErr = m.Stdout, m.Stderr
		return s.cfg.Runner.Ended(m)
	}
	var dir, work string
	// In place when the images can be read there, else copied out
	// (inplace.go).
	err = errNotInPlace
	if loc, ok := res.(pathRestored); ok && s.cfg.Scratch != "" {
		dir, work, err = s.inPlace(res, loc, m)
	}
	if errors.Is(err, errNotInPlace) {
		dir, err = s.fetch(res, m)
		work = dir
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if s.cfg.Net != nil && len(m.Conns) > 0 {
		// Quiet from before this end is back until every end is
		// (reconnect).
		if err := s.cfg.Net.Lock(m.Conns); err != nil {
			return err
		}
	}
	if s.tree, err = s.cfg.Runner.Restore(ctx, dir, work, m); err != nil {
		return fmt.Errorf("restoring checkpoint %s: %w", res.Name(), err)
	}
	s.rep.RestoreTime = time.Since(start)
	return nil
}

// reconnect waits until every rank's tree is back (restored, started, or
// not there), then lets its connections through: an end restored before
// its peer would have been reset by the peer's kernel. beginErr is this
// rank's begin's: a rank that failed fails every rank.
func (s *supervisor) reconnect(ctx context.Context, beginErr error) error {
	ok, aerr := s.agree(ctx, beginErr == nil)
	uerr := s.cfg.Net.Unlock()
	if beginErr == nil && aerr == nil && !ok {
		aerr = errors.New("another rank could not restore its program")
	}
	return firstErr(beginErr, aerr, uerr)
}

// clearScratch removes what a supervisor that died in a dump or a restore
// (its node lost, killed) left in the rank's scratch directory: a
// half-written dump is not a checkpoint (its images enter one only once
// every rank's dump succeeded), only garbage that would stay forever.
func (s *supervisor) clearScratch() error {
	if s.cfg.Scratch == "" {
		return nil // nothing of the rank's own to clear
	}
	for _, pattern := range []string{"dump-*", "restore-*"} {
		left, err := filepath.Glob(filepath.Join(s.cfg.Scratch, pattern))
		if err != nil {
			return err
		}
		for _, dir := range left {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("removing what a crashed supervisor left: %w", err)
			}
		}
	}
	return nil
}

// readMeta reads a restored checkpoint's MetaFile.
func readMeta(res Restored) (Meta, error) {
	r, err := res.Open(MetaFile)
	if err != nil {
		return Meta{}, fmt.Errorf("checkpoint %s: %w", res.Name(), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return Meta{}, fmt.Errorf("checkpoint %s: %w", res.Name(), err)
	}
	return UnmarshalMeta(b)
}

// fetch copies a restored checkpoint's images into a new directory of the
// scratch area, for CRIU.
func (s *supervisor) fetch(res Restored, m Meta) (string, error) {
	if err := os.MkdirAll(s.cfg.Scratch, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(s.cfg.Scratch, "restore-")
	if err != nil {
		return "", err
	}
	for _, name := range m.Images {
		if err := copyOut(res, name, filepath.Join(dir, name), slices.Contains(m.Compressed, name)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("checkpoint %s: image %s: %w", res.Name(), name, err)
		}
	}
	return dir, nil
}

func copyOut(res Restored, name, path string, compressed bool) error {
	r, err := res.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := loadImage(f, r, compressed); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// agree tells the other ranks whether this one succeeded and returns
// whether every rank did: a checkpoint step that failed anywhere fails
// everywhere, and no rank waits for one that gave up.
func (s *supervisor) agree(ctx context.Context, ok bool) (bool, error) {
	b := []byte{0}
	if ok {
		b[0] = 1
	}
	all, err := s.job.AllGather(ctx, b)
	if err != nil {
		return false, err
	}
	for _, x := range all {
		if len(x) != 1 || x[0] != 1 {
			return false, nil
		}
	}
	return true, nil
}

// checkpoint takes one checkpoint of every rank's tree (see the package
// doc: freeze all, dump each, resume all, then store and commit).
func (s *supervisor) checkpoint(ctx context.Context) error {
	name := fmt.Sprintf("t%08d", s.step)
	err := s.job.Checkpoint(ctx, name, func(f Files) error {
		return s.save(ctx, name, f)
	})
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", name, err)
	}
	s.rep.Checkpoints++
	return nil
}

// save writes this rank's part of checkpoint name.
func (s *supervisor) save(ctx context.Context, name string, f Files) error {
	m := Meta{Step: s.step}
	var err error
	frozen := false
	if s.tree != nil {
		err = s.tree.Freeze(ctx)
		switch {
		case errors.Is(err, ErrExited):
			// It ended between the tick and the freeze: the checkpoint
			// records its end once its output is in.
			err = s.waitEnd(ctx)
		case err == nil:
			frozen = true
			m.Stdout, m.Stderr, err = s.tree.Sync()
			if fl, ok := s.tree.(fileLister); ok && err == nil {
				m.Files, err = fl.OpenFiles()
			}
			if err == nil && s.cfg.Net != nil {
				m.Conns, err = s.lock()
			}
		}
	}
	if s.tree == nil {
		m.Exited, m.ExitCode = true, s.end.code
		m.Stdout, m.Stderr = s.endOut, s.endErr
	}
	var unlockErr error
	thaw := func() {
		if s.cfg.Net != nil && frozen {
			unlockErr = s.cfg.Net.Unlock()
		}
		if frozen {
			s.tree.Thaw()
			frozen = false
		}
	}
	defer thaw()
	// Every tree is stopped before any is dumped.
	ok, aerr := s.agree(ctx, err == nil)
	if err != nil || aerr != nil || !ok {
		return firstErr(err, aerr, errors.New("another rank could not freeze its program"))
	}
	// The images go straight into the checkpoint's directory in the
	// cache when it has one (inplace.go), else into the scratch area.
	var dir, metaPath string
	loc, direct := f.(pathFiles)
	if frozen && direct && s.cfg.Scratch != "" {
		if metaPath, err = loc.Path(MetaFile); err != nil {
			direct = false // not a directory: the images are copied in
			err = nil
		}
	}
	direct = direct && metaPath != ""
	if frozen {
		var work string
		if direct {
			dir = filepath.Dir(metaPath)
			work, err = s.dump(ctx, dir)
		} else {
			dir, err = s.dump(ctx, "")
			work = dir
		}
		if work != "" {
			defer os.RemoveAll(work)
		}
		if err != nil && direct {
			// A failed dump's images are gone at once; the engine
			// removes the rest of the rank's part when the checkpoint
			// fails.
			clearDir(dir)
		}
	}
	// Every tree is dumped before any resumes.
	ok, aerr = s.agree(ctx, err == nil)
	thaw()
	if err != nil || aerr != nil || !ok {
		return firstErr(err, aerr, errors.New("another rank could not dump its program"))
	}
	if unlockErr != nil {
		// The connections would stay dead: the checkpoint fails, and
		// the job goes back to the previous one.
		return unlockErr
	}
	switch {
	case direct:
		m.Images, m.Compressed, err = s.storeInPlace(loc, dir)
	case dir != "":
		m.Images, m.Compressed, err = s.store(f, dir)
	}
	if err != nil {
		return err
	}
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	if direct {
		return os.WriteFile(metaPath, b, 0o600)
	}
	return writeFile(f, MetaFile, b)
}

// lock lists the frozen tree's connections and keeps them quiet until
// the dump is over (thaw): every rank locks before the freeze's
// agreement, so no packet crosses between any rank's dump and another's.
func (s *supervisor) lock() ([]tcplock.Conn, error) {
	var conns []tcplock.Conn
	if cl, ok := s.tree.(connLister); ok {
		var err error
		if conns, err = cl.Conns(); err != nil {
			return nil, err
		}
	}
	return conns, s.cfg.Net.Lock(conns)
}

// waitEnd waits for the program that just ended to be done (its output
// read to the end) and records its end.
func (s *supervisor) waitEnd(ctx context.Context) error {
	select {
	case <-s.tree.Done():
		s.ended(s.tree.ExitCode())
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dump has CRIU dump the frozen tree into images, the checkpoint's
// directory in the cache, emptied first ("": into the new scratch
// directory it returns), with its log in a new scratch directory, which
// it returns (the caller removes it).
func (s *supervisor) dump(ctx context.Context, images string) (string, error) {
	if err := os.MkdirAll(s.cfg.Scratch, 0o700); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(s.cfg.Scratch, "dump-")
	if err != nil {
		return "", err
	}
	if images == "" {
		images = work
	} else if err := clearDir(images); err != nil {
		return work, err
	}
	start := time.Now()
	stop := func() {}
	if images != work {
		// Into the cache, which the commit syncs: the disk writes
		// overlap the dump.
		stop = writeBehind(images)
	}
	err = s.cfg.Tool.Dump(ctx, criu.DumpRequest{Pid: s.tree.Pid(), Dir: images, WorkDir: work, LeaveRunning: true,
		TCPEstablished: s.cfg.Net != nil})
	stop()
	s.rep.DumpTime += time.Since(start)
	return work, err
}

// store copies the images of dir into the checkpoint, each compressed
// when it pays (compress.go), and returns their names and those of the
// compressed ones; CRIU's logs and statistics stay behind (isImage).
func (s *supervisor) store(f Files, dir string) (names, compressed []string, err error) {
	return s.eachImage(dir, func(enc *zstd.Encoder, name, path string) (raw, stored int64, z bool, err error) {
		return copyIn(enc, f, name, path)
	})
}

// copyIn stores the image at path as the checkpoint's file name.
func copyIn(enc *zstd.Encoder, f Files, name, path string) (raw, stored int64, compressed bool, err error) {
	r, raw, err := openImage(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer r.Close()
	w, err := f.Create(name)
	if err != nil {
		return 0, 0, false, err
	}
	stored, compressed, err = storeImage(enc, w, r, raw)
	if err != nil {
		w.Close()
		return raw, stored, compressed, err
	}
	return raw, stored, compressed, w.Close()
}

func writeFile(f Files, name string, b []byte) error {
	w, err := f.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
