package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/jobtls"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// StagingConfig describes a job's staging servers (paper 001): processes
// of their own, outside the job's attempts, so that flushes under way
// survive a relaunch of the job.
type StagingConfig struct {
	Servers int
	// Program and Args run one server (`ckpt stage` and its flags); the
	// launcher adds --listen, --state, --addr-file and --json, and gives
	// the token in CKPT_STAGE_TOKEN.
	Program string
	Args    []string
	// Dir holds each server's journal (Dir/stage<i>) and address file.
	Dir string
	// Token is the job's staging secret (CKPT_STAGE_TOKEN for the ranks).
	Token string
	// TLS names the job's TLS files (Job.TLS), handed to the servers in
	// CKPT_TLS_CA, CKPT_TLS_CERT and CKPT_TLS_KEY: they then take only
	// clients with the job's certificate.
	TLS jobtls.Files
	// Log receives the servers' stderr.
	Log io.Writer
	// Event, if set, is told of every flush a server finished, and of a
	// server's restart.
	Event func(StageEvent)
}

// StageEvent is one line a staging server printed with --json, or a
// restart of a server.
type StageEvent struct {
	Server  int     `json:"-"`
	Name    string  `json:"name"`
	State   string  `json:"state"` // committed, durable, failed; "restarted" for a server restart
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason,omitempty"`
}

// Staging is a running set of staging servers. A server that dies is
// started again on the same address with the same journal, so that the
// nodes' clients reconnect and its flushes resume.
type Staging struct {
	cfg   StagingConfig
	addrs []string

	logMu    sync.Mutex
	mu       sync.Mutex
	procs    []*exec.Cmd
	events   []StageEvent
	restarts int
	stopping bool
	wg       sync.WaitGroup
}

// StartStaging starts the servers and returns once each listens.
func StartStaging(cfg StagingConfig) (*Staging, error) {
	if cfg.Servers < 1 {
		return nil, fmt.Errorf("launch: %d staging servers: need at least 1", cfg.Servers)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := os.MkdirAll(cfg.Dir, local.DirMode); err != nil {
		return nil, err
	}
	s := &Staging{cfg: cfg, addrs: make([]string, cfg.Servers), procs: make([]*exec.Cmd, cfg.Servers)}
	exited := make([]<-chan struct{}, cfg.Servers)
	for i := range cfg.Servers {
		addr, ex, err := s.start(i, "127.0.0.1:0")
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("launch: staging server %d: %w", i, err)
		}
		s.addrs[i], exited[i] = addr, ex
	}
	// The addresses are fixed from here on: a server is always started
	// again on its own.
	for i := range cfg.Servers {
		s.wg.Add(1)
		go s.supervise(i, exited[i])
	}
	return s, nil
}

// Addrs are the servers' addresses, for CKPT_STAGE.
func (s *Staging) Addrs() []string { return s.addrs }

// Events returns the flushes the servers finished so far.
func (s *Staging) Events() []StageEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StageEvent(nil), s.events...)
}

// Restarts counts the servers started again after they died.
func (s *Staging) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Kill kills server i (SIGKILL), as a failure would; it is started again.
func (s *Staging) Kill(i int) error {
	s.mu.Lock()
	p := s.procs[i]
	s.mu.Unlock()
	if p == nil || p.Process == nil {
		return fmt.Errorf("launch: staging server %d is not running", i)
	}
	return p.Process.Kill()
}

// Stop stops every server (SIGTERM, then SIGKILL after 5 s) and waits.
func (s *Staging) Stop() error {
	s.mu.Lock()
	s.stopping = true
	procs := append([]*exec.Cmd(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		if p != nil && p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
			go func() {
				time.Sleep(5 * time.Second)
				p.Process.Kill()
			}()
		}
	}
	s.wg.Wait()
	return nil
}

// start runs server i listening on listen and waits for its address. The
// channel is closed when the process has exited and its output is read.
func (s *Staging) start(i int, listen string) (string, <-chan struct{}, error) {
	addrFile := filepath.Join(s.cfg.Dir, fmt.Sprintf("stage%d.addr", i))
	os.Remove(addrFile)
	args := append([]string(nil), s.cfg.Args...)
	args = append(args, "--listen", listen, "--state", filepath.Join(s.cfg.Dir, fmt.Sprintf("stage%d", i)),
		"--addr-file", addrFile, "--json")
	cmd := exec.Command(s.cfg.Program, args...)
	// The token goes in the environment, which only the job's user can
	// read (/proc/PID/environ), not on the command line, which every
	// user of the host sees in ps.
	cmd.Env = append(os.Environ(), jobenv.VarStageToken+"="+s.cfg.Token)
	cmd.Env = append(cmd.Env, jobenv.Env{TLS: s.cfg.TLS}.Encode()...)
	cmd.Stderr = &prefixWriter{mu: &s.logMu, w: s.cfg.Log, prefix: fmt.Sprintf("stage%d: ", i)}
	// Its own process group: a Ctrl-C at the terminal reaches the
	// launcher alone, which stops the servers when the job is over.
	setProcessGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	if s.stopping {
		// Stop has signalled the processes it knew of already.
		cmd.Process.Kill()
	}
	s.procs[i] = cmd
	s.mu.Unlock()
	exited := make(chan struct{})
	s.wg.Add(1)
	go s.watch(i, cmd, out, exited)
	deadline := time.After(10 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			return strings.TrimSpace(string(b)), exited, nil
		}
		select {
		case <-exited:
			return "", nil, errors.New("exited before listening")
		case <-deadline:
			cmd.Process.Kill()
			return "", nil, errors.New("did not start listening within 10s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// watch reads server i's events until it exits.
func (s *Staging) watch(i int, cmd *exec.Cmd, out io.Reader, exited chan struct{}) {
	defer s.wg.Done()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e StageEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		e.Server = i
		s.record(e)
	}
	cmd.Wait()
	close(exited)
}

func (s *Staging) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// supervise starts server i again, on the same address and with the same
// journal, each time it dies (unless the set is stopping), so that the
// clients find it again and its pending flushes resume. It alone restarts
// server i: a start that fails is retried here, never by another
// goroutine.
func (s *Staging) supervise(i int, exited <-chan struct{}) {
	defer s.wg.Done()
	for {
		<-exited
		if s.isStopping() {
			return
		}
		// The port may take a moment to be free.
		var err error
		for try := 0; try < 50 && !s.isStopping(); try++ {
			if _, exited, err = s.start(i, s.addrs[i]); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if s.isStopping() {
			return
		}
		if err != nil {
			fmt.Fprintf(s.cfg.Log, "stage%d: could not start again: %v\n", i, err)
			return
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		s.record(StageEvent{Server: i, State: "restarted"})
	}
}

func (s *Staging) record(e StageEvent) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	if s.cfg.Event != nil {
		s.cfg.Event(e)
	}
}
