package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coordnet"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/policy"
)

// The test binary doubles as a rank: with LAUNCH_TEST_MODE set it acts out
// the mode and exits. It talks to the fake coordinator through files in
// LAUNCH_TEST_DIR.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LAUNCH_TEST_MODE"); mode != "" {
		os.Exit(fakeRank(mode))
	}
	os.Exit(m.Run())
}

func fakeRank(mode string) int {
	dir := os.Getenv("LAUNCH_TEST_DIR")
	rank, _ := strconv.Atoi(os.Getenv(jobenv.VarRank))
	inc, _ := strconv.Atoi(os.Getenv(jobenv.VarIncarnation))
	publish := func(key, v string) {
		// Atomically, as the coordinator's key–value service: a rank
		// killed while it publishes must not leave half a value.
		name := filepath.Join(dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(key, "/", "_"), inc))
		os.WriteFile(name+".tmp", []byte(v), 0o644)
		os.Rename(name+".tmp", name)
	}
	leave := func() int {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("left.%d.%d", inc, rank)), nil, 0o644)
		return 0
	}
	env := fmt.Sprintf("%s %s %s %s %s", os.Getenv(jobenv.VarSize), os.Getenv(jobenv.VarNode),
		os.Getenv(jobenv.VarCache), os.Getenv(jobenv.VarCoord), os.Getenv("EXTRA"))
	if os.Getenv("LAUNCH_TEST_FLUSH") != "" && rank == 0 {
		// What a rank reads of the launches before, and what it flushed:
		// before the environment, so that no failure of another rank kills
		// it first.
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("prior.%d", inc)), []byte(os.Getenv(jobenv.VarFlushPrior)), 0o644)
		b, _ := jobenv.FlushStats{Mode: "blocking", K: 2, Due: inc + 1, Seconds: 0.5}.Encode()
		publish(jobenv.KeyFlush, string(b))
	}
	if d, err := time.ParseDuration(os.Getenv("LAUNCH_TEST_RANK0_DELAY")); err == nil && rank == 0 {
		time.Sleep(d) // a slow rank, as on a busy machine
	}
	// Written whole or not at all (a rank may be killed at any moment).
	envFile := func(r int) string { return filepath.Join(dir, fmt.Sprintf("env.%d.%d", inc, r)) }
	os.WriteFile(envFile(rank)+".tmp", []byte(env), 0o644)
	os.Rename(envFile(rank)+".tmp", envFile(rank))
	// A failing rank ends its attempt at once: it fails only after every
	// rank has written its environment, which the tests read, so that no
	// rank is killed before it has (waiting at most a minute, then failing
	// with another status).
	failAfterEnv := func() int {
		size, _ := strconv.Atoi(os.Getenv(jobenv.VarSize))
		deadline := time.Now().Add(time.Minute)
		for r := 0; r < size; {
			if _, err := os.Stat(envFile(r)); err == nil {
				r++
				continue
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "rank %d: rank %d wrote no environment in a minute\n", rank, r)
				return 4
			}
			time.Sleep(5 * time.Millisecond)
		}
		return 3
	}
	if tmp := os.Getenv(mpiTmpVar); tmp != "" {
		_, err := os.Stat(tmp)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("mpitmp.%d.%d", inc, rank)), fmt.Appendf(nil, "%s %v", tmp, err == nil), 0o644)
	}
	fmt.Printf("hello from %d\npartial line", rank)
	if rank == 0 {
		publish(jobenv.KeyRestored, fmt.Sprintf("rebuild c-%d", inc))
	}
	switch mode {
	case "ok":
		if rank == 0 {
			publish(jobenv.KeyResult, "checksum 42")
		}
		return leave()
	case "fail-first":
		if inc == 0 && rank == 1 {
			awaitRestored(dir, inc)
			return failAfterEnv()
		}
		return leave()
	case "fail-always":
		if rank == 1 {
			awaitRestored(dir, inc)
			return failAfterEnv()
		}
		return leave()
	case "coord-alone":
		// Over the real coordinator (Coordinators.Uncoordinated): rank
		// 1's first process joins and is killed; its next process
		// rejoins the running job and says so; the others wait for that,
		// then leave.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		size, _ := strconv.Atoi(os.Getenv(jobenv.VarSize))
		c, err := coordnet.Dial(ctx, coordnet.ClientConfig{Addr: os.Getenv(jobenv.VarCoord), Token: os.Getenv(jobenv.VarToken),
			Incarnation: uint64(inc), Node: os.Getenv(jobenv.VarNode), Rank: rank, Size: size})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		defer c.Close()
		f, _ := os.OpenFile(filepath.Join(dir, fmt.Sprintf("starts.%d.%d", inc, rank)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, os.Getenv(jobenv.VarRecoverAlone))
		f.Close()
		switch {
		case rank == 1 && os.Getenv(jobenv.VarRecoverAlone) == "":
			self, _ := os.FindProcess(os.Getpid())
			self.Kill()
			time.Sleep(time.Minute)
		case rank == 1:
			if err := c.Publish(ctx, "back", []byte("1")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 5
			}
		default:
			if _, _, err := c.Lookup(ctx, "back", true); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 5
			}
		}
		if rank == 0 {
			c.Publish(ctx, jobenv.KeyResult, []byte("all back"))
		}
		// What each rank's logging cost: rank r, r seconds and r ms.
		c.Publish(ctx, jobenv.KeyMsgLog(rank), jobenv.MsgLogStats{Protect: time.Duration(rank) * time.Second, Replay: time.Duration(rank) * time.Millisecond}.Encode())
		// Who waited on whom: ranks 0 and 1 exchanged messages, rank 2
		// with nobody.
		c.Publish(ctx, jobenv.KeyPeers(rank), jobenv.EncodePeers(map[int][]int{0: {1}, 1: {0}}[rank]))
		if err := c.Leave(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
		return 0
	case "die-once-alone", "cannot-serve":
		// Uncoordinated: rank 1's first process is killed; the others
		// run on until its process restarted alone says it is back.
		f, _ := os.OpenFile(filepath.Join(dir, fmt.Sprintf("starts.%d.%d", inc, rank)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, os.Getenv(jobenv.VarRecoverAlone))
		f.Close()
		back := filepath.Join(dir, fmt.Sprintf("back.%d", inc))
		switch {
		case rank == 1 && os.Getenv(jobenv.VarRecoverAlone) == "":
			self, _ := os.FindProcess(os.Getpid())
			self.Kill()
			time.Sleep(time.Minute)
		case rank == 1 && mode == "cannot-serve" && inc == 0:
			fmt.Fprintln(os.Stderr, "ckpt: message log of rank 1: hash mismatch")
			return ExitCannotServe
		case rank == 1:
			os.WriteFile(back, nil, 0o644)
			return leave()
		}
		for range 6000 {
			if _, err := os.Stat(back); err == nil {
				return leave()
			}
			time.Sleep(10 * time.Millisecond)
		}
		return 4
	case "node-lost":
		// Uncoordinated, a node lost: the first processes of the ranks
		// of the last node wait to be killed with it; their processes
		// restarted alone say they are back; the others leave once
		// every one is.
		size, _ := strconv.Atoi(os.Getenv(jobenv.VarSize))
		back := func(r int) string { return filepath.Join(dir, fmt.Sprintf("back.%d.%d", inc, r)) }
		switch {
		case rank >= size/2 && os.Getenv(jobenv.VarRecoverAlone) == "":
			time.Sleep(time.Minute)
			return 4
		case rank >= size/2:
			os.WriteFile(back(rank), nil, 0o644)
			return leave()
		}
		for r := size / 2; r < size; {
			if _, err := os.Stat(back(r)); err == nil {
				r++
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
		return leave()
	case "die-always":
		if rank == 1 {
			// Killed from outside, as by the kernel's OOM killer.
			self, _ := os.FindProcess(os.Getpid())
			self.Kill()
			time.Sleep(time.Minute)
		}
		return leave()
	case "config":
		if rank == 1 {
			fmt.Fprintln(os.Stderr, "\nckpt: redundancy xor:9: 4 nodes cannot hold a set of 9")
			return ExitConfig
		}
		time.Sleep(time.Minute) // until the launcher kills it
		return leave()
	case "config-late":
		// As a rank does: it closes its connection (the coordinator
		// aborts the job), then reports and exits a moment later.
		if rank == 1 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("closed.%d", inc)), nil, 0o644)
			time.Sleep(500 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "bad grid for 2 ranks")
			return ExitConfig
		}
		time.Sleep(time.Minute)
		return leave()
	case "false":
		// A program that always fails, restoring nothing.
		os.Remove(filepath.Join(dir, fmt.Sprintf("ckpt_restored.%d", inc)))
		return 1
	case "die-first-hang-second":
		if inc == 0 && rank == 1 {
			self, _ := os.FindProcess(os.Getpid())
			self.Kill()
			time.Sleep(time.Minute)
		}
		if inc == 1 {
			time.Sleep(time.Minute) // until the injected failure
		}
		return leave()
	case "hang-first":
		if inc == 0 {
			time.Sleep(time.Minute)
		}
		return leave()
	}
	return 9
}

// awaitRestored waits until rank 0 said what it restored: a failure after
// it is one after a restore, which a relaunch may fix.
func awaitRestored(dir string, inc int) {
	for range 3000 {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ckpt_restored.%d", inc))); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "rank 0 never said what it restored")
	os.Exit(4)
}

// fakeCoord reads what fake ranks publish from files.
type fakeCoord struct {
	dir   string
	inc   uint64
	ranks int
	done  chan struct{}
	stop  chan struct{}
	once  sync.Once
	halts int
	err   error // set before done is closed
}

func (c *fakeCoord) Addr() string          { return fmt.Sprintf("coord-%d", c.inc) }
func (c *fakeCoord) Done() <-chan struct{} { return c.done }
func (c *fakeCoord) Err() error            { return c.err }
func (c *fakeCoord) Halt()                 { c.halts++ }
func (c *fakeCoord) Close() error          { c.once.Do(func() { close(c.stop) }); return nil }
func (c *fakeCoord) Value(key string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("%s.%d", strings.ReplaceAll(key, "/", "_"), c.inc)))
	return b, err == nil
}

// watch closes done once every rank of the incarnation has left.
func (c *fakeCoord) watch() {
	for {
		n := 0
		for r := range c.ranks {
			if _, err := os.Stat(filepath.Join(c.dir, fmt.Sprintf("left.%d.%d", c.inc, r))); err == nil {
				n++
			}
		}
		if n == c.ranks {
			close(c.done)
			return
		}
		if _, err := os.Stat(filepath.Join(c.dir, fmt.Sprintf("closed.%d", c.inc))); err == nil {
			c.err = errors.New("rank 1 (node node0): connection closed before leave")
			close(c.done)
			return
		}
		select {
		case <-c.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type fixture struct {
	cfg    Config
	dir    string
	out    strings.Builder
	events []Event
	mu     sync.Mutex
}

func newFixture(t *testing.T, mode string, ranks, nodes int) *fixture {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: t.TempDir()}
	f.cfg = Config{
		Ranks: ranks, Nodes: nodes, Program: exe, Retries: 3,
		Env:       []string{"LAUNCH_TEST_MODE=" + mode, "LAUNCH_TEST_DIR=" + f.dir, "EXTRA=x"},
		CacheRoot: filepath.Join(f.dir, "cache"),
		NewCoordinator: func(inc uint64, token string) (Coordinator, error) {
			if len(token) != 32 {
				t.Errorf("token %q: want 32 hex digits", token)
			}
			c := &fakeCoord{dir: f.dir, inc: inc, ranks: ranks, done: make(chan struct{}), stop: make(chan struct{})}
			go c.watch()
			return c, nil
		},
		Output: &lockedWriter{mu: &f.mu, b: &f.out},
		Event: func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
	}
	return f
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (f *fixture) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var k []string
	for _, e := range f.events {
		k = append(k, e.Kind)
	}
	return k
}

// Each rank the local launcher starts has an MPI session directory base
// of its own, there while it runs and removed when it ends: MPI singletons
// started together race for one under the shared temp directory.
func TestRunGivesEachRankItsOwnMPITmp(t *testing.T) {
	if v, ok := os.LookupEnv(mpiTmpVar); ok {
		t.Fatalf("this test needs %s unset (it is %q): the launcher keeps a value the user chose", mpiTmpVar, v)
	}
	f := newFixture(t, "ok", 4, 2)
	if _, err := Run(t.Context(), f.cfg); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for r := range 4 {
		b, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("mpitmp.0.%d", r)))
		if err != nil {
			t.Fatalf("rank %d saw no %s: %v", r, mpiTmpVar, err)
		}
		dir, existed, _ := strings.Cut(string(b), " ")
		if existed != "true" {
			t.Errorf("rank %d: its %s %s did not exist while it ran", r, mpiTmpVar, dir)
		}
		if q, ok := seen[dir]; ok {
			t.Errorf("ranks %d and %d share %s %s", q, r, mpiTmpVar, dir)
		}
		seen[dir] = r
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("rank %d's %s is still there after the job: %v", r, dir, err)
		}
	}
	// A value the job sets is the job's: no directory of the launcher's.
	g := newFixture(t, "ok", 2, 1)
	mine := t.TempDir()
	g.cfg.Env = append(g.cfg.Env, mpiTmpVar+"="+mine)
	if _, err := Run(t.Context(), g.cfg); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		b, err := os.ReadFile(filepath.Join(g.dir, fmt.Sprintf("mpitmp.0.%d", r)))
		if err != nil || string(b) != mine+" true" {
			t.Errorf("rank %d saw %q (%v), want the job's own %s", r, b, err, mine)
		}
	}
}

func TestRunFinishes(t *testing.T) {
	f := newFixture(t, "ok", 4, 2)
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Attempts) != 1 || rep.Attempts[0].Failure != "" {
		t.Fatalf("attempts %+v", rep.Attempts)
	}
	if rep.Result != "checksum 42" {
		t.Errorf("result %q", rep.Result)
	}
	if a := rep.Attempts[0]; a.Restored != "rebuild" || a.Checkpoint != "c-0" {
		t.Errorf("restored %q %q", a.Restored, a.Checkpoint)
	}
	// Ranks fill nodes in blocks, each node with its own cache.
	for r := range 4 {
		b, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("env.0.%d", r)))
		if err != nil {
			t.Fatal(err)
		}
		node := fmt.Sprintf("node%d", r/2)
		want := fmt.Sprintf("4 %s %s coord-0 x", node, filepath.Join(f.cfg.CacheRoot, node))
		if string(b) != want {
			t.Errorf("rank %d sees %q, want %q", r, b, want)
		}
	}
	// Output comes line by line with the rank; a last partial line is kept
	// back rather than mixed with another rank's.
	for r := range 4 {
		if !strings.Contains(f.out.String(), fmt.Sprintf("[rank %d] hello from %d\n", r, r)) {
			t.Errorf("output lacks rank %d's line:\n%s", r, f.out.String())
		}
	}
	if want := []string{"launch", "restored", "finish"}; !slices.Equal(f.kinds(), want) {
		t.Errorf("events %v, want %v", f.kinds(), want)
	}
}

func TestRunRelaunchesAfterFailure(t *testing.T) {
	f := newFixture(t, "fail-first", 3, 3)
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2: %+v", len(rep.Attempts), rep.Attempts)
	}
	if fl := rep.Attempts[0].Failure; !strings.Contains(fl, "rank 1") || !strings.Contains(fl, "exit status 3") {
		t.Errorf("first attempt's failure %q: want rank 1's exit status", fl)
	}
	if rep.Attempts[1].Failure != "" || rep.Attempts[1].Incarnation != 1 || rep.Attempts[1].Checkpoint != "c-1" {
		t.Errorf("second attempt %+v", rep.Attempts[1])
	}
	if !slices.Contains(f.kinds(), "fail") {
		t.Errorf("events %v lack the failure", f.kinds())
	}
}

// Each launch gets what the launches before it flushed, and the report
// sums the launches' flushes, typed.
func TestRunFlushPrior(t *testing.T) {
	f := newFixture(t, "fail-first", 2, 2)
	f.cfg.Env = append(f.cfg.Env, "LAUNCH_TEST_FLUSH=1")
	iv, err := policy.Parse("30s")
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Job = jobenv.Env{Interval: &iv, Redundancy: "partner"}
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(rep.Attempts))
	}
	for inc, want := range []jobenv.FlushStats{{}, {Mode: "blocking", K: 2, Due: 1, Seconds: 0.5}} {
		b, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("prior.%d", inc)))
		if err != nil {
			t.Fatal(err)
		}
		var got jobenv.FlushStats
		if len(b) > 0 {
			if got, err = jobenv.DecodeFlushStats(b); err != nil {
				t.Fatalf("attempt %d: %s=%q: %v", inc, jobenv.VarFlushPrior, b, err)
			}
		}
		if got != want {
			t.Errorf("attempt %d got %s %+v, want %+v", inc, jobenv.VarFlushPrior, got, want)
		}
		if a := rep.Attempts[inc].Flush; a.Due != inc+1 || a.Mode != "blocking" {
			t.Errorf("attempt %d flushed %+v", inc, a)
		}
	}
	if want := (jobenv.FlushStats{Mode: "blocking", K: 2, Due: 3, Seconds: 1}); rep.Flush != want {
		t.Errorf("report's flush %+v, want %+v", rep.Flush, want)
	}
}

// Each attempt's ranks get what AttemptEnv makes of the attempts before
// it (the later value of a variable wins over Config.Env's).
func TestRunAttemptEnv(t *testing.T) {
	f := newFixture(t, "fail-first", 2, 2)
	// Rank 0 comes late: the failing rank 1 must not end the attempt
	// before rank 0 has written the environment checked below.
	f.cfg.Env = append(f.cfg.Env, "LAUNCH_TEST_RANK0_DELAY=500ms")
	var seen []int
	f.cfg.AttemptEnv = func(done []Attempt) []string {
		seen = append(seen, len(done))
		if len(done) > 0 && done[0].Failure == "" {
			t.Errorf("attempt 0 handed on without its failure: %+v", done[0])
		}
		return []string{fmt.Sprintf("EXTRA=after-%d", len(done))}
	}
	if _, err := Run(t.Context(), f.cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{0, 1}) {
		t.Errorf("AttemptEnv saw %v attempts done, want [0 1]", seen)
	}
	for inc, want := range []string{"after-0", "after-1"} {
		for r := range 2 {
			b, err := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("env.%d.%d", inc, r)))
			if err != nil || !strings.HasSuffix(string(b), " "+want) {
				t.Errorf("attempt %d rank %d: environment %q (%v), want EXTRA=%s", inc, r, b, err, want)
			}
		}
	}
}

// Uncoordinated: a rank killed while the attempt runs is restarted alone,
// told so in its environment, while the others run on: one attempt, no
// rank but the killed one started twice.
func TestRunRecoversRankAlone(t *testing.T) {
	f := newFixture(t, "die-once-alone", 3, 2)
	f.cfg.Uncoordinated = true
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if len(rep.Attempts) != 1 || !slices.Equal(rep.Attempts[0].RecoveredAlone, []int{1}) ||
		rep.RanksRecoveredAlone != 1 || rep.WholeJobRestarts != 0 {
		t.Fatalf("report %+v", rep)
	}
	for r, want := range []string{"\n", "\n1\n", "\n"} {
		b, _ := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("starts.0.%d", r)))
		if string(b) != want {
			t.Errorf("rank %d's starts (%s each): %q, want %q", r, jobenv.VarRecoverAlone, b, want)
		}
	}
	k := f.kinds()
	k = slices.DeleteFunc(k, func(s string) bool { return s == "restored" }) // when the poll sees it
	if !slices.Equal(k, []string{"launch", "recover", "finish"}) {
		t.Errorf("events %v", f.kinds())
	}
	for _, e := range f.events {
		if e.Kind == "recover" && (!slices.Equal(e.Ranks, []int{1}) || !strings.Contains(e.Reason, "SIGKILL")) {
			t.Errorf("recover event %+v", e)
		}
	}
}

// Uncoordinated, over the real coordinator and the local launcher: rank
// 1's process is killed after it joined; only it is started again, its
// next process rejoins the running attempt (however the coordinator orders
// the old connection's end and the new Hello), and the job finishes in
// one attempt with every rank's result.
func TestRunRecoversRankAloneWithCoordinator(t *testing.T) {
	f := newFixture(t, "coord-alone", 3, 2)
	co := &Coordinators{Ranks: 3, Nodes: 2, Uncoordinated: true, HeartbeatTimeout: time.Minute}
	f.cfg.NewCoordinator = co.New
	f.cfg.Uncoordinated = true
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if len(rep.Attempts) != 1 || rep.RanksRecoveredAlone != 1 || rep.WholeJobRestarts != 0 || rep.Result != "all back" {
		t.Fatalf("report %+v\n%s", rep, f.out.String())
	}
	// The ranks' statistics, summed: 0+1+2.
	if want := (jobenv.MsgLogStats{Protect: 3 * time.Second, Replay: 3 * time.Millisecond}); rep.MsgLog != want || rep.Attempts[0].MsgLog != want {
		t.Errorf("message logging %+v (attempt %+v), want %+v", rep.MsgLog, rep.Attempts[0].MsgLog, want)
	}
	// φ (Fialho et al. 2011 eq. 12): P = 2, 2, 1 over N² = 9.
	if rep.Phi != 5.0/9 || rep.Attempts[0].Phi != 5.0/9 {
		t.Errorf("phi %v (attempt %v), want 5/9", rep.Phi, rep.Attempts[0].Phi)
	}
	for r, want := range []string{"\n", "\n1\n", "\n"} {
		b, _ := os.ReadFile(filepath.Join(f.dir, fmt.Sprintf("starts.0.%d", r)))
		if string(b) != want {
			t.Errorf("rank %d's starts: %q, want %q", r, b, want)
		}
	}
}

// Without Config.Uncoordinated the same death relaunches the whole job.
func TestRunRecoversAloneOnlyUncoordinated(t *testing.T) {
	f := newFixture(t, "die-once-alone", 2, 1)
	f.cfg.AbortGrace = 100 * time.Millisecond
	rep, err := Run(t.Context(), f.cfg)
	if err == nil || rep.RanksRecoveredAlone != 0 {
		// Every launch's rank 1 dies: its first process in each.
		t.Fatalf("err %v, report %+v", err, rep)
	}
	if !errors.Is(err, ErrRetriesExhausted) || rep.WholeJobRestarts != f.cfg.Retries {
		t.Fatalf("err %v, %d whole-job restarts, want %d", err, rep.WholeJobRestarts, f.cfg.Retries)
	}
}

// A rank restarted alone whose checkpoint and log cannot serve exits with
// ExitCannotServe: the attempt ends and the whole job is relaunched, which
// the report counts.
func TestRunFallsBackWhenAloneCannotServe(t *testing.T) {
	f := newFixture(t, "cannot-serve", 2, 1)
	f.cfg.Uncoordinated = true
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if len(rep.Attempts) != 2 || rep.RanksRecoveredAlone != 2 || rep.WholeJobRestarts != 1 {
		// Rank 1 is killed in both launches; the second recovery serves.
		t.Fatalf("report %+v", rep)
	}
	a := rep.Attempts[0]
	if a.Class != ClassFailure || !strings.Contains(a.Cause, "cannot serve a recovery alone") || !strings.Contains(a.Cause, "hash mismatch") {
		t.Errorf("first attempt: class %q, cause %q", a.Class, a.Cause)
	}
}

// The retries bound the restarts alone too; a launcher that cannot
// restart one rank says at the launch that failures relaunch the whole
// job.
func TestRunRecoverAloneFallbacks(t *testing.T) {
	f := newFixture(t, "die-once-alone", 2, 1)
	f.cfg.Uncoordinated, f.cfg.Retries, f.cfg.AbortGrace = true, 0, 100*time.Millisecond
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrRetriesExhausted) || rep.RanksRecoveredAlone != 0 {
		t.Fatalf("no retries: err %v, report %+v", err, rep)
	}
	if !slices.Contains(f.kinds(), "fallback") {
		t.Errorf("no retries: events %v, want a fallback", f.kinds())
	}

	g := newFixture(t, "die-once-alone", 2, 1)
	g.cfg.Uncoordinated, g.cfg.Retries, g.cfg.AbortGrace = true, 1, 100*time.Millisecond
	g.cfg.Launcher = togetherLauncher{}
	rep, err = Run(t.Context(), g.cfg)
	if !errors.Is(err, ErrRetriesExhausted) || rep.RanksRecoveredAlone != 0 || rep.WholeJobRestarts != 1 {
		t.Fatalf("launcher without restarts: err %v, report %+v", err, rep)
	}
	if k := g.kinds(); len(k) < 2 || k[1] != "fallback" || !strings.Contains(g.events[1].Reason, "cannot restart one alone") {
		t.Errorf("launcher without restarts: events %v", k)
	}
}

// A hung rank is vacated by the coordinator, but its process does not end:
// the launcher would never restart it, so the combination is refused.
func TestRunRefusesHangFailuresUncoordinated(t *testing.T) {
	f := newFixture(t, "ok", 2, 1)
	f.cfg.Uncoordinated, f.cfg.HangFailures = true, true
	if _, err := Run(t.Context(), f.cfg); err == nil || !strings.Contains(err.Error(), "hang failures") {
		t.Fatalf("Run: %v, want a refusal of hang failures", err)
	}
	if k := f.kinds(); len(k) != 0 {
		t.Errorf("events %v: something was launched", k)
	}
}

// togetherLauncher starts ranks as Local does, but cannot restart one
// (as mpirun and srun).
type togetherLauncher struct{}

func (togetherLauncher) Name() string { return "together" }
func (togetherLauncher) Start(ctx context.Context, s Spec) (Ranks, error) {
	r, err := Local{}.Start(ctx, s)
	if err != nil {
		return nil, err
	}
	return struct{ Ranks }{r}, nil
}

func TestRunRetriesExhausted(t *testing.T) {
	f := newFixture(t, "die-always", 2, 1)
	f.cfg.Retries = 2
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrRetriesExhausted) {
		t.Fatalf("err %v, want ErrRetriesExhausted", err)
	}
	if len(rep.Attempts) != 3 {
		t.Errorf("%d attempts, want 3 (one launch and two retries)", len(rep.Attempts))
	}
}

// schedule injects failures at fixed times and targets.
type schedule struct {
	at      []time.Duration
	targets []int
	lives   []int
}

func (s *schedule) Next(live int) (time.Duration, int) {
	s.lives = append(s.lives, live)
	if len(s.at) == 0 {
		return -1, 0
	}
	at, tg := s.at[0], s.targets[0]
	s.at, s.targets = s.at[1:], s.targets[1:]
	return at, tg
}

func TestRunInjectsNodeFailure(t *testing.T) {
	f := newFixture(t, "hang-first", 4, 2)
	sched := &schedule{at: []time.Duration{300 * time.Millisecond}, targets: []int{1}}
	f.cfg.Failures, f.cfg.NodeFailures = sched, true
	lost := filepath.Join(f.cfg.CacheRoot, "node1")
	kept := filepath.Join(f.cfg.CacheRoot, "node0")
	for _, d := range []string{lost, kept} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Injected != 1 || len(rep.Attempts) != 2 || rep.Attempts[1].Failure != "" {
		t.Fatalf("injected %d, attempts %+v", rep.Injected, rep.Attempts)
	}
	if _, err := os.Stat(lost); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lost node's cache survived: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the other node's cache is gone: %v", err)
	}
	var inj *Event
	for i, e := range f.events {
		if e.Kind == "inject" {
			inj = &f.events[i]
		}
	}
	if inj == nil || inj.Node != 1 || !slices.Equal(inj.Ranks, []int{2, 3}) || inj.At < 300*time.Millisecond {
		t.Errorf("inject event %+v: want node 1, ranks [2 3], at ≥ 300ms", inj)
	}
	if sched.lives[0] != 2 {
		t.Errorf("schedule asked with %d live targets, want 2 nodes", sched.lives[0])
	}
}

// Injected failures strike on the job's wall clock, the gap between
// launches included, as the models assume: a failure that comes due while
// the launcher waits to relaunch strikes the next launch as soon as it is
// up, not a gap's length later.
func TestRunInjectedFailureDueBetweenLaunches(t *testing.T) {
	f := newFixture(t, "die-first-hang-second", 2, 1)
	f.cfg.Retries = 3
	// The first launch dies by itself (so the relaunch waits the backoff,
	// 10 s); the failure is due 5 s into the job, inside that wait. The
	// first launch must end 2 s before it (on a machine loaded 16 times
	// over its cores it took 1.9 s), so that a clock stopped between
	// launches would strike at least 2 s late, against 1 s allowed.
	const due, wait = 5 * time.Second, 10 * time.Second
	f.cfg.Backoff, f.cfg.MaxBackoff = wait, wait
	f.cfg.Failures = &schedule{at: []time.Duration{due}, targets: []int{0}}
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Injected != 1 || len(rep.Attempts) != 3 {
		t.Fatalf("injected %d, %d attempts: %+v", rep.Injected, len(rep.Attempts), rep.Attempts)
	}
	a0, a1 := rep.Attempts[0], rep.Attempts[1]
	if a0.End > due-2*time.Second {
		t.Fatalf("the first launch lasted %v: too close to the failure due at %v for this test", a0.End, due)
	}
	var inj *Event
	f.mu.Lock()
	for i, e := range f.events {
		if e.Kind == "inject" {
			inj = &f.events[i]
		}
	}
	f.mu.Unlock()
	if inj == nil || inj.Incarnation != 1 {
		t.Fatalf("inject event %+v: want one in the second launch", inj)
	}
	if a0.Injected || !a1.Injected || a1.InjectedAt != inj.At {
		t.Errorf("attempts say injected %v, %v at %v; want only the second, at %v", a0.Injected, a1.Injected, a1.InjectedAt, inj.At)
	}
	// A clock that stopped between launches would fire due − a0.End (at
	// least 2 s) after the second launch started.
	if late := inj.At - a1.Start; late > time.Second {
		t.Errorf("the failure due at %v struck %v after the second launch started at %v (the first ended at %v): the gap between launches was not counted",
			due, late, a1.Start, a0.End)
	}
}

func TestRunCancelKillsRanks(t *testing.T) {
	f := newFixture(t, "hang-first", 2, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, f.cfg)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run took %v after cancellation", d)
	}
}

func TestConfigErrors(t *testing.T) {
	base := Config{Ranks: 4, Nodes: 2, Program: "x", CacheRoot: "c",
		NewCoordinator: func(uint64, string) (Coordinator, error) { return nil, errors.New("no") }}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Ranks = 0 }, "0 ranks"},
		{func(c *Config) { c.Nodes = 5 }, "5 nodes"},
		{func(c *Config) { c.Program = "" }, "no program"},
		{func(c *Config) { c.Retries = -1 }, "-1 retries"},
	} {
		c := base
		tc.mod(&c)
		if _, err := Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", c, err, tc.want)
		}
	}
	if _, err := Run(t.Context(), base); err == nil || !strings.Contains(err.Error(), "coordinator: no") {
		t.Errorf("failing coordinator: %v", err)
	}
}

func TestNodeOf(t *testing.T) {
	for _, tc := range []struct{ ranks, nodes int }{{8, 4}, {7, 3}, {5, 5}, {16, 1}} {
		count := make([]int, tc.nodes)
		prev := 0
		for r := range tc.ranks {
			n := NodeOf(r, tc.ranks, tc.nodes)
			if n < prev || n >= tc.nodes {
				t.Fatalf("NodeOf(%d, %d, %d) = %d", r, tc.ranks, tc.nodes, n)
			}
			prev = n
			count[n]++
		}
		for n, c := range count {
			if c < tc.ranks/tc.nodes || c > tc.ranks/tc.nodes+1 {
				t.Errorf("%d ranks on %d nodes: node %d holds %d", tc.ranks, tc.nodes, n, c)
			}
		}
	}
}

// A rank that reports a configuration error ends the job at once, with
// the rank's own message rather than the others' symptoms.
func TestRunGivesUpOnConfigError(t *testing.T) {
	f := newFixture(t, "config", 4, 2)
	start := time.Now()
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrGaveUp) {
		t.Fatalf("err %v, want ErrGaveUp", err)
	}
	if len(rep.Attempts) != 1 {
		t.Errorf("%d attempts, want 1: a configuration error is not relaunched", len(rep.Attempts))
	}
	for _, want := range []string{"rank 1 (node node0)", "status 78", "xor:9: 4 nodes cannot hold"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if rep.Class != ClassConfig || !strings.Contains(rep.Cause, "xor:9") {
		t.Errorf("report class %q cause %q", rep.Class, rep.Cause)
	}
	// The others were killed at once, not waited for (they sleep a minute).
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run took %v", d)
	}
}

// A program that fails before any checkpoint is not relaunched: it would
// start from scratch and fail the same way.
func TestRunGivesUpOnAlwaysFailingProgram(t *testing.T) {
	f := newFixture(t, "false", 3, 3)
	f.cfg.Retries = 10
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "before its first checkpoint") {
		t.Fatalf("err %v, want ErrGaveUp before the first checkpoint", err)
	}
	if len(rep.Attempts) != 1 || rep.Class != ClassApplication {
		t.Errorf("%d attempts, class %q; want 1, %q", len(rep.Attempts), rep.Class, ClassApplication)
	}
}

// An application error after a restore is relaunched once; when the
// relaunch fails the same way without a new checkpoint, the job stops.
func TestRunGivesUpOnRepeatedApplicationError(t *testing.T) {
	f := newFixture(t, "fail-always", 2, 2)
	f.cfg.Retries = 10
	f.cfg.Backoff = -1
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrGaveUp) {
		t.Fatalf("err %v, want ErrGaveUp", err)
	}
	if n := len(rep.Attempts); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if !strings.Contains(rep.Cause, "rank 1") || !strings.Contains(rep.Cause, "status 3") {
		t.Errorf("cause %q: want rank 1's status 3", rep.Cause)
	}
}

// Relaunches wait longer and longer: a program that keeps failing costs a
// few relaunches, not hundreds a second.
func TestRunBacksOff(t *testing.T) {
	f := newFixture(t, "die-always", 2, 1)
	f.cfg.Retries = 3
	f.cfg.Backoff, f.cfg.MaxBackoff = 200*time.Millisecond, 500*time.Millisecond
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrRetriesExhausted) {
		t.Fatalf("err %v, want ErrRetriesExhausted", err)
	}
	if len(rep.Attempts) != 4 {
		t.Fatalf("%d attempts, want 4", len(rep.Attempts))
	}
	want := []time.Duration{200, 400, 500}
	var waits []time.Duration
	f.mu.Lock()
	for _, e := range f.events {
		if e.Kind == "fail" && e.Backoff > 0 {
			waits = append(waits, e.Backoff)
		}
	}
	f.mu.Unlock()
	for i, w := range want {
		if i >= len(waits) || waits[i] != w*time.Millisecond {
			t.Fatalf("backoffs %v, want %v ms", waits, want)
		}
		if gap := rep.Attempts[i+1].Start - rep.Attempts[i].End; gap < w*time.Millisecond {
			t.Errorf("relaunch %d came %v after the failure, want ≥ %v", i+1, gap, w*time.Millisecond)
		}
	}
	if !strings.Contains(rep.Cause, "rank 1") || !strings.Contains(rep.Cause, "SIGKILL") {
		t.Errorf("cause %q: want rank 1 killed", rep.Cause)
	}
}

// Config.Stop asks every attempt to halt, and a failed attempt is not
// launched again.
func TestRunStopHaltsAndDoesNotRelaunch(t *testing.T) {
	f := newFixture(t, "die-always", 2, 1)
	stop := make(chan struct{})
	close(stop)
	f.cfg.Stop = stop
	var coords []*fakeCoord
	newCoord := f.cfg.NewCoordinator
	f.cfg.NewCoordinator = func(inc uint64, token string) (Coordinator, error) {
		c, err := newCoord(inc, token)
		coords = append(coords, c.(*fakeCoord))
		return c, err
	}
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("err %v, want ErrStopped", err)
	}
	if len(rep.Attempts) != 1 || len(coords) != 1 || coords[0].halts != 1 || !rep.Halted {
		t.Errorf("%d attempts, %d coordinators, halted %v: want one attempt asked to halt once", len(rep.Attempts), len(coords), rep.Halted)
	}
	if rep.Class != ClassStopped {
		t.Errorf("class %q, want %q", rep.Class, ClassStopped)
	}
}

// The coordinator aborts the job as soon as the failing rank closes its
// connection; the rank's exit status comes a moment later. The ranks get
// the abort grace to exit on their own, so the cause is the rank's
// configuration error, not the abort.
func TestRunAbortGraceKeepsTheCause(t *testing.T) {
	f := newFixture(t, "config-late", 2, 1)
	f.cfg.AbortGrace = 30 * time.Second // far more than the rank needs
	start := time.Now()
	rep, err := Run(t.Context(), f.cfg)
	if !errors.Is(err, ErrGaveUp) || rep.Class != ClassConfig {
		t.Fatalf("err %v, class %q: want a configuration error, not relaunched", err, rep.Class)
	}
	if !strings.Contains(rep.Cause, "bad grid for 2 ranks") || !strings.Contains(rep.Attempts[0].Failure, "connection closed") {
		t.Errorf("cause %q, symptom %q", rep.Cause, rep.Attempts[0].Failure)
	}
	// Rank 1's configuration error ended the grace: rank 0 (which does
	// not exit on its own) was killed then, not 30 s later.
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("Run took %v: the cause did not end the grace", d)
	}
}

// measuredPhi is eq. 12 over the published peers: a 3×2 torus (each rank
// exchanging with its left, right and upper = lower neighbours) gives
// P(n) = 4 and φ = 4/6; a rank that published nothing, or garbage, or a
// rank out of range, leaves φ unmeasured (0).
func TestMeasuredPhi(t *testing.T) {
	torus := map[int]string{0: "1,2,3", 1: "0,2,4", 2: "0,1,5", 3: "0,4,5", 4: "1,3,5", 5: "2,3,4"}
	get := func(m map[int]string) func(int) ([]byte, bool) {
		return func(r int) ([]byte, bool) { v, ok := m[r]; return []byte(v), ok }
	}
	if got := measuredPhi(6, get(torus)); math.Abs(got-4.0/6) > 1e-15 {
		t.Errorf("torus: phi %v, want 4/6", got)
	}
	// Only one direction published: the other rank still counts it.
	if got := measuredPhi(2, get(map[int]string{0: "1", 1: "-"})); got != 1 {
		t.Errorf("one-sided pair: phi %v, want 1", got)
	}
	for name, m := range map[string]map[int]string{
		"missing": {0: "1"}, "garbage": {0: "x", 1: "0"}, "out of range": {0: "2", 1: "0"},
	} {
		if got := measuredPhi(2, get(m)); got != 0 {
			t.Errorf("%s: phi %v, want 0", name, got)
		}
	}
}
