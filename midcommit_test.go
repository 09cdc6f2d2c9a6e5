package ckpt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/cachetier"
	"github.com/ckpt/ckpt/internal/inspect"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/storage/local"
)

// The job of TestKillOneRankMidCommit: every rank is a process of this test
// binary under the launcher, and one of them is SIGKILLed from outside
// while the others go on, at a chosen point of a commit.

// midCommitVar tells the test binary to act as a rank of that job: "POINT
// VICTIM DIR" (the commit point, the victim's rank, the test's directory).
const midCommitVar = "CKPT_TEST_MIDCOMMIT"

const (
	midSteps  = 30 // the job's steps; checkpoints after steps 10 and 20
	midKillAt = 20 // the step whose checkpoint the victim is killed in
	midBytes  = 300 << 10
)

// midState is rank r's state after step: a chain of the steps, so that a
// rank resumed from a wrong step, or with wrong bytes, ends elsewhere.
func midState(r, step int) uint64 {
	s := uint64(r)*0x9e3779b97f4a7c15 + 1
	for i := 1; i <= step; i++ {
		s = s*6364136223846793005 + uint64(i)
	}
	return s
}

// midPayload is what rank r saves after step: the step, the state, and
// bytes drawn from the state (enough for several parity blocks).
func midPayload(r, step int) []byte {
	s := midState(r, step)
	b := binary.LittleEndian.AppendUint64(nil, uint64(step))
	b = binary.LittleEndian.AppendUint64(b, s)
	rng := rand.New(rand.NewPCG(s, uint64(r)))
	for len(b) < midBytes {
		b = binary.LittleEndian.AppendUint64(b, rng.Uint64())
	}
	return b
}

// midResult is the job's result line: every rank's final state.
func midResult(states [][]byte) string {
	h := sha256.New()
	for _, s := range states {
		h.Write(s)
	}
	return fmt.Sprintf("states %x", h.Sum(nil)[:8])
}

// commitHook is the Comm of a rank's store that stops the rank inside the
// commit it is armed for (internal/engine's Commit): at its first parity
// send ("parity"); at its second collective round, its parity durable but
// no node's manifest written, since every node waits for this round
// ("round2"); or at its third round, the manifest vote, after its node's
// manifest is written ("vote"). It writes the marker file (its pid and the
// point) and blocks until it is killed.
type commitHook struct {
	Comm
	point, marker string
	armed         atomic.Bool
	rounds        atomic.Int32
}

func (h *commitHook) trip() {
	tmp := h.marker + ".tmp"
	os.WriteFile(tmp, fmt.Appendf(nil, "%d %s", os.Getpid(), h.point), 0o644)
	os.Rename(tmp, h.marker)
	select {} // until SIGKILL
}

func (h *commitHook) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if h.armed.Load() {
		n := h.rounds.Add(1)
		if h.point == "round2" && n == 2 || h.point == "vote" && n == 3 {
			h.trip()
		}
	}
	return h.Comm.AllGather(ctx, data)
}

func (h *commitHook) SetTransport(ctx context.Context, members []int, epoch uint64) (Transport, io.Closer, error) {
	tr, c, err := h.Comm.SetTransport(ctx, members, epoch)
	if err == nil && h.armed.Load() && h.point == "parity" {
		tr = hookedTransport{tr, h}
	}
	return tr, c, err
}

type hookedTransport struct {
	Transport
	h *commitHook
}

func (t hookedTransport) Send(ctx context.Context, to int, tag uint64, msg []byte) error {
	t.h.trip()
	return nil
}

// hookStore gives the job a store whose Comm is wrap of the job's own: a
// program's Comm, as Options.Comm takes one, over the job's coordinator
// and peers. The checkpoints the Job takes go through it.
func hookStore(j *Job, wrap func(Comm) Comm) error {
	s, err := Open(Options{Rank: j.Rank(), Size: j.Size(), Node: j.Node(), Comm: wrap(j.store.comm)})
	if err != nil {
		return err
	}
	j.store.Close()
	j.store = s
	j.r.Attach(s.eng)
	return nil
}

// The rank program of TestKillOneRankMidCommit.
func TestMidCommitRank(t *testing.T) {
	spec := os.Getenv(midCommitVar)
	if spec == "" {
		t.Skip("rank program of TestKillOneRankMidCommit")
	}
	if err := midCommitRank(spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func midCommitRank(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return fmt.Errorf("%s=%q: want POINT VICTIM DIR", midCommitVar, spec)
	}
	victim, err := strconv.Atoi(f[1])
	if err != nil {
		return err
	}
	ctx := context.Background()
	job, err := Join(ctx, JobOptions{})
	if err != nil {
		return err
	}
	defer job.Close()
	hook := &commitHook{point: f[0], marker: filepath.Join(f[2], "marker")}
	if err := hookStore(job, func(c Comm) Comm { hook.Comm = c; return hook }); err != nil {
		return err
	}
	r, inc := job.Rank(), job.Incarnation()
	step, state := 0, midState(r, 0)
	res, err := job.Restart(ctx)
	switch {
	case err == nil:
		rd, err := res.Open("state")
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return err
		}
		if len(b) < 16 {
			return fmt.Errorf("restored state of %d bytes", len(b))
		}
		step, state = int(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint64(b[8:])
		// What the test checks: the checkpoint, the step and the bytes.
		report := filepath.Join(f[2], fmt.Sprintf("restored.%d.%d", inc, r))
		os.WriteFile(report, fmt.Appendf(nil, "%s %d %x", res.Name(), step, sha256.Sum256(b)), 0o644)
	case !errors.Is(err, ErrNoCheckpoint):
		return err
	}
	for step < midSteps {
		step++
		state = state*6364136223846793005 + uint64(step)
		if step%10 != 0 || step == midSteps {
			continue
		}
		if inc == 0 && r == victim && step == midKillAt {
			hook.armed.Store(true)
		}
		name := fmt.Sprintf("s%d-i%d", step, inc)
		err := job.Checkpoint(ctx, name, func(c *Checkpoint) error {
			w, err := c.Create("state")
			if err != nil {
				return err
			}
			if _, err := w.Write(midPayload(r, step)); err != nil {
				return err
			}
			return w.Close()
		})
		if err != nil {
			return err
		}
	}
	all, err := job.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, state))
	if err != nil {
		return err
	}
	return job.Finish(ctx, midResult(all))
}

// One rank process of a job of four is SIGKILLed inside the commit of its
// second checkpoint while the other three go on, until the coordinator
// notices: during the parity exchange, at the round after it (its parity
// durable), and at the manifest vote (its node's manifest written).
//
// Before any manifest is written the checkpoint does not exist: it is
// never listed, the coordinator never records it, and the relaunch
// restores the first one. At the vote it may exist already: a node writes
// its manifest, the commit marker, only once the round before proved every
// rank's data and parity durable, and the launcher kills the other ranks
// as soon as the victim dies, before they can take theirs back. Then
// whatever the caches list of it must restore bit-exactly, and the
// relaunch restores it or, if the others took it back, the first one.
// Either way every rank restores the same checkpoint bit-exactly and the
// job ends with the result of a run without failures. The parity point
// runs in tree mode too, where the victim's relay sees it die.
func TestKillOneRankMidCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs jobs of rank processes")
	}
	for _, point := range []string{"parity", "round2", "vote"} {
		t.Run(point, func(t *testing.T) { killMidCommit(t, point, false) })
	}
	// In tree mode the victim's relay sees it die and fails the job.
	t.Run("parity-tree", func(t *testing.T) { killMidCommit(t, "parity", true) })
}

func killMidCommit(t *testing.T, point string, tree bool) {
	const ranks, victim = 4, 2
	dir := t.TempDir()
	cacheRoot := filepath.Join(dir, "caches")
	none, err := policy.Parse("none")
	if err != nil {
		t.Fatal(err)
	}
	spec := launch.Job{Ranks: ranks, Nodes: ranks, Program: os.Args[0],
		Args:       []string{"-test.run=^TestMidCommitRank$", "-test.count=1"},
		Redundancy: "xor:4", Interval: none, Retries: 1, Heartbeat: 10 * time.Second, Tree: tree}
	cfg, coords, err := spec.Config(cacheRoot)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Env = []string{fmt.Sprintf("%s=%s %d %s", midCommitVar, point, victim, dir)}
	var mu sync.Mutex
	var out bytes.Buffer
	cfg.Output = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	logs := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	var committed []string
	coords.OnCommit = func(inc uint64, name string) { mu.Lock(); committed = append(committed, name); mu.Unlock() }
	listCaches := func() []inspect.Listing {
		caches, err := inspect.OpenCacheRoot(cacheRoot)
		if err != nil {
			t.Errorf("caches: %v", err)
			return nil
		}
		l, err := inspect.ListCheckpoints(context.Background(), inspect.Tiers{Caches: caches})
		if err != nil {
			t.Errorf("listing: %v", err)
		}
		return l
	}
	// What the caches list when the killed attempt has ended, before the
	// relaunch: what `ckpt ls` would show then.
	listedAfterKill := make(chan []inspect.Listing, 1)
	cfg.Event = func(e launch.Event) {
		if e.Kind == "fail" && e.Incarnation == 0 {
			listedAfterKill <- listCaches()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type ran struct {
		rep launch.Report
		err error
	}
	done := make(chan ran, 1)
	go func() {
		rep, err := launch.Run(ctx, cfg)
		done <- ran{rep, err}
	}()

	// The victim stops inside the commit and says so.
	marker := filepath.Join(dir, "marker")
	var pid int
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if b, err := os.ReadFile(marker); err == nil {
			var p string
			if _, err := fmt.Sscanf(string(b), "%d %s", &pid, &p); err != nil || p != point {
				t.Fatalf("marker %q", b)
			}
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the job ended before the victim reached the %s point: %v\n%s", point, r.err, logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim did not reach the %s point in 3 minutes\n%s", point, logs())
		}
	}
	// Where the commit stands: before the vote no node can have written
	// the manifest (every node waits for the victim's blocks or its second
	// round first); at the vote the victim's node has.
	name := fmt.Sprintf("s%d-i0", midKillAt)
	if point == "vote" {
		victimCache, err := local.New(filepath.Join(cacheRoot, fmt.Sprintf("node%d", victim)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := victimCache.Stat(context.Background(), cachetier.ManifestObject(name)); err != nil {
			t.Fatalf("at the vote, node %d holds no manifest of %s: %v", victim, name, err)
		}
	} else if l := listed(listCaches(), name); l != nil {
		t.Fatalf("at the %s point, %s is listed on %v", point, name, l.InCache)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the victim (pid %d): %v", pid, err)
	}
	var r ran
	select {
	case r = <-done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("the job did not end in 4 minutes after the kill\n%s", logs())
	}
	if r.err != nil {
		t.Fatalf("job: %v\n%s", r.err, logs())
	}
	rep := r.rep
	if len(rep.Attempts) != 2 || rep.Attempts[0].Failure == "" || rep.Attempts[1].Failure != "" {
		t.Fatalf("attempts %+v, want a failed one and a finished one\n%s", rep.Attempts, logs())
	}
	var afterKill []inspect.Listing
	select {
	case afterKill = <-listedAfterKill:
	default:
		t.Fatal("the launcher reported no failed first attempt")
	}

	// What the relaunch restored: the first checkpoint, or at the vote
	// the one killed, if the caches still list it.
	restored := rep.Attempts[1].Checkpoint
	// The coordinator never counted the checkpoint the victim died in;
	// a relaunch from the first one commits its own second one.
	mu.Lock()
	got := slices.Clone(committed)
	mu.Unlock()
	want := []string{"s10-i0", "s20-i1"}
	if restored == name {
		want = want[:1]
	}
	if !slices.Equal(got, want) {
		t.Errorf("the coordinators recorded commits %v, want %v (restored %s)", got, want, restored)
	}
	killed := listed(afterKill, name)
	switch {
	case point != "vote" && killed != nil:
		t.Errorf("after the kill at the %s point, %s is listed on %v: a checkpoint that never existed", point, name, killed.InCache)
	case restored == "s10-i0":
	case restored == name && killed != nil:
		t.Logf("the victim's checkpoint was complete (manifest on %v) and restored", killed.InCache)
	default:
		t.Errorf("the relaunch restored %q (%s); the caches listed %v after the kill", restored, rep.Attempts[1].Restored, afterKill)
	}
	step := 10
	if restored == name {
		step = midKillAt
	}
	for rk := range ranks {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("restored.1.%d", rk)))
		if err != nil {
			t.Errorf("rank %d reported no restore: %v", rk, err)
			continue
		}
		if want := fmt.Sprintf("%s %d %x", restored, step, sha256.Sum256(midPayload(rk, step))); string(b) != want {
			t.Errorf("rank %d restored %q, want %q", rk, b, want)
		}
	}
	states := make([][]byte, ranks)
	for rk := range states {
		states[rk] = binary.LittleEndian.AppendUint64(nil, midState(rk, midSteps))
	}
	if want := midResult(states); rep.Result != want {
		t.Errorf("result %q, want %q", rep.Result, want)
	}
	if point != "vote" {
		if l := listed(listCaches(), name); l != nil {
			t.Errorf("at the end, %s is listed on %v", name, l.InCache)
		}
	}
	if t.Failed() {
		t.Logf("the ranks said:\n%s", logs())
	}
}

// listed is the listing of checkpoint name, nil if there is none.
func listed(ls []inspect.Listing, name string) *inspect.Listing {
	for i := range ls {
		if ls[i].Name == name {
			return &ls[i]
		}
	}
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
