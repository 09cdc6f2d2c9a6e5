package uncoord

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/msglog"
	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// The tests run paper 003's synthetic application (Fialho et al. 2011
// §4): ranks on a W×H torus compute, send to their right and lower
// neighbours, and receive from their left and upper ones. Each rank
// checkpoints on its own schedule; the tests make ranks fail and compare
// the result bit for bit with a failure-free run's.

const (
	gridW, gridH = 3, 2
	steps        = 40
)

var errCrashed = errors.New("crashed (injected)")

// mix is splitmix64's finaliser: every bit of the result depends on every
// bit of the input, so any lost, duplicated or reordered message shows.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func neighbours(r int) (right, down, left, up int) {
	x, y := r%gridW, r/gridW
	return (x+1)%gridW + y*gridW, x + (y+1)%gridH*gridW, (x+gridW-1)%gridW + y*gridW, x + (y+gridH-1)%gridH*gridW
}

// payload encodes v in a message whose length varies with the step.
func payload(v uint64, step int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, v)
	return append(b, make([]byte, step%5)...)
}

type saved struct {
	step int
	v    uint64
	snap []byte
}

// crashFn says whether rank should fail at step, at point where: midStep
// (between its two sends) or midCheckpoint (its checkpoint saved, the log
// not yet truncated); it is called with the rank's driver.
type crashFn func(j *job, rank, step int, where string, r *Rank) bool

const (
	midStep       = "mid-step"
	midCheckpoint = "mid-checkpoint"
	afterReplay   = "after-replay" // recovered (step is the checkpoint's), not yet re-executing
)

// job is one run of the application, with the runtime's part played by
// the test: the node caches (saved), the protectors' logs, the relaunch of
// a failed rank alone, and the fallback to a whole-job restart.
type job struct {
	t      *testing.T
	n      int
	newLog func(rank int) logstore.Store
	crash  crashFn

	// newNet makes the network of an attempt; MemNet by default.
	newNet func(t *testing.T) testNet

	mu        sync.Mutex
	net       testNet
	logs      []logstore.Store
	saved     []*saved
	ranks     []*Rank
	starts    []int // per rank, starts in this attempt
	alone     int   // ranks recovered alone
	whole     int   // whole-job restarts
	cannot    []error
	result    []uint64
	stats     []Stats
	finished  int
	allDone   chan struct{}
	ckptEvery func(rank int) int
	// afterCrash, if set, runs once the failed rank's driver is closed.
	afterCrash func(j *job, d *Rank)
	// files, if set, keeps the ranks' checkpoints as a runtime does
	// (Checkpoints): a restarted rank loads its own from them, not from
	// saved.
	files *Checkpoints

	// killed says a rank's current incarnation was killed from another
	// goroutine (killNow): whatever its calls returned, it failed, and
	// the launcher restarts it alone. icancel ends its calls.
	killed  []bool
	icancel []context.CancelFunc
	// afterKill, if set, runs once a rank killed by killNow has closed
	// its driver, before it restarts: what else its failure takes.
	afterKill func(j *job, rank int)
}

// killNow kills rank's current incarnation from any goroutine: a failure
// in the middle of something the rank's own goroutine does not control
// (an append to its log, its replay). Its network endpoint fails and its
// calls end; the rank's goroutine then closes its driver and the launcher
// restarts it alone.
func (j *job) killNow(rank int) {
	j.mu.Lock()
	j.killed[rank] = true
	net, cancel := j.net, j.icancel[rank]
	j.mu.Unlock()
	net.kill(rank)
	if cancel != nil {
		cancel()
	}
}

// wasKilled says, once, whether rank's last incarnation was killed by
// killNow.
func (j *job) wasKilled(rank int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	k := j.killed[rank]
	j.killed[rank] = false
	return k
}

func newJob(t *testing.T, crash crashFn) *job {
	return &job{t: t, n: gridW * gridH, crash: crash,
		newLog:    func(int) logstore.Store { return logstore.NewMem() },
		newNet:    func(*testing.T) testNet { return memNet{NewMemNet()} },
		ckptEvery: func(rank int) int { return 3 + rank }}
}

// crashes makes rank r fail if j.crash says so.
func (j *job) crashes(r, step int, where string, d *Rank) bool {
	if j.crash == nil || !j.crash(j, r, step, where, d) {
		return false
	}
	j.mu.Lock()
	net := j.net
	j.mu.Unlock()
	net.kill(r)
	d.Close()
	if j.afterCrash != nil {
		j.afterCrash(j, d) // the process is gone: what else fails
	}
	return true
}

func (j *job) rank(r int) *Rank {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ranks[r]
}

// run runs the job to its end, relaunching failed ranks alone, and
// falling back to a whole-job restart when the logs cannot serve.
func (j *job) run(ctx context.Context) []uint64 {
	j.t.Helper()
	for attempt := 0; ; attempt++ {
		if attempt > 1 {
			j.t.Fatalf("no success after %d whole-job restarts: %v", attempt-1, j.cannot)
		}
		j.mu.Lock()
		j.net = j.newNet(j.t)
		j.logs = make([]logstore.Store, j.n)
		for r := range j.logs {
			j.logs[r] = j.newLog(r)
		}
		j.saved = make([]*saved, j.n)
		j.ranks = make([]*Rank, j.n)
		j.starts = make([]int, j.n)
		j.result = make([]uint64, j.n)
		j.stats = make([]Stats, j.n)
		j.killed = make([]bool, j.n)
		j.icancel = make([]context.CancelFunc, j.n)
		j.finished = 0
		j.allDone = make(chan struct{})
		j.mu.Unlock()
		actx, cancel := context.WithCancel(ctx)
		errs := make([]error, j.n)
		var wg sync.WaitGroup
		for r := range j.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				restarted := false
				for {
					err := j.runRank(actx, r, restarted)
					if j.wasKilled(r) && actx.Err() == nil {
						if j.afterKill != nil {
							j.afterKill(j, r)
						}
						err = errCrashed
					}
					if errors.Is(err, errCrashed) {
						restarted = true // the launcher restarts this rank alone
						continue
					}
					if err != nil {
						cancel()
					}
					errs[r] = err
					return
				}
			}()
		}
		wg.Wait()
		cancel()
		for _, l := range j.logs {
			l.Close()
		}
		var cannot []error
		var other []error
		for r, err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, ErrCannotServe):
				cannot = append(cannot, fmt.Errorf("rank %d: %w", r, err))
			case errors.Is(err, context.Canceled) && ctx.Err() == nil:
				// Stopped for the fallback.
			default:
				other = append(other, fmt.Errorf("rank %d: %w", r, err))
			}
		}
		if len(other) > 0 {
			j.t.Fatalf("run failed: %v", other)
		}
		if len(cannot) == 0 {
			return j.result
		}
		j.cannot = append(j.cannot, cannot...)
		j.whole++
		j.crash = nil // the restarted job runs without failures
	}
}

// runRank runs one incarnation of rank r.
func (j *job) runRank(ctx context.Context, r int, restarted bool) error {
	ctx, cancel := context.WithCancel(ctx) // this incarnation's: killNow ends it
	defer cancel()
	j.mu.Lock()
	j.icancel[r] = cancel
	net, log := j.net, j.logs[r]
	var from saved
	var snap []byte
	if restarted && j.saved[r] != nil && j.files == nil {
		from = *j.saved[r]
		snap = from.snap
	}
	j.starts[r]++
	j.mu.Unlock()
	if restarted && j.files != nil {
		state, sb, err := j.files.Load(r)
		switch {
		case errors.Is(err, ErrNoCheckpoint):
		case err != nil:
			return err
		case len(state) != 16:
			return fmt.Errorf("rank %d: a state of %d bytes", r, len(state))
		default:
			from = saved{step: int(binary.LittleEndian.Uint64(state)), v: binary.LittleEndian.Uint64(state[8:]), snap: sb}
			snap = sb
		}
	}
	ep, err := net.endpoint(r)
	if err != nil {
		return err
	}
	d, err := Start(ctx, Config{Rank: r, Size: j.n, Net: ep, Log: log, Restarted: restarted, Saved: snap})
	if err != nil {
		return err
	}
	defer d.Close()
	j.mu.Lock()
	j.ranks[r] = d
	if restarted {
		j.alone++
	}
	j.mu.Unlock()
	if restarted && j.crashes(r, from.step, afterReplay, d) {
		return errCrashed
	}
	right, down, left, up := neighbours(r)
	v := from.v
	if from.snap == nil {
		v = mix(uint64(r))
	}
	for step := from.step; step < steps; step++ {
		v = mix(v ^ uint64(step))
		if err := d.Send(ctx, right, payload(v, step)); err != nil {
			return err
		}
		if j.crashes(r, step, midStep, d) {
			return errCrashed
		}
		if err := d.Send(ctx, down, payload(^v, step)); err != nil {
			return err
		}
		a, err := d.Recv(ctx, left)
		if err != nil {
			return err
		}
		b, err := d.Recv(ctx, up)
		if err != nil {
			return err
		}
		if len(a) != 8+step%5 || len(b) != 8+step%5 {
			return fmt.Errorf("rank %d step %d: messages of %d and %d bytes, want %d", r, step, len(a), len(b), 8+step%5)
		}
		v = mix(v ^ mix(binary.LittleEndian.Uint64(a)) ^ mix(mix(binary.LittleEndian.Uint64(b))))
		if (step+1)%j.ckptEvery(r) == 0 {
			// A local checkpoint: no barrier, no drain, no vote.
			s := d.Checkpoint()
			j.mu.Lock()
			j.saved[r] = &saved{step: step + 1, v: v, snap: s.Bytes()}
			j.mu.Unlock()
			if j.files != nil {
				state := binary.LittleEndian.AppendUint64(nil, uint64(step+1))
				if err := j.files.Save(r, binary.LittleEndian.AppendUint64(state, v), s.Bytes()); err != nil {
					return err
				}
			}
			if j.crashes(r, step, midCheckpoint, d) {
				return errCrashed
			}
			if err := d.Protected(s); err != nil {
				return err
			}
		}
	}
	if err := d.Flush(ctx); err != nil {
		return err
	}
	j.mu.Lock()
	j.result[r] = v
	j.stats[r] = d.Stats()
	j.finished++
	if j.finished == j.n {
		close(j.allDone)
	}
	done := j.allDone
	j.mu.Unlock()
	// Stay to answer peers that restart until every rank has finished, as
	// a rank stays in its job until the job's end.
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// testNet is the network of one attempt: a new incarnation of a rank,
// and its failure.
type testNet interface {
	endpoint(rank int) (Net, error)
	kill(rank int)
}

type memNet struct{ *MemNet }

func (n memNet) endpoint(rank int) (Net, error) { return n.Endpoint(rank), nil }
func (n memNet) kill(rank int)                  { n.Kill(rank) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// reference is the failure-free run's result.
func reference(t *testing.T) []uint64 {
	t.Helper()
	j := newJob(t, nil)
	res := j.run(testCtx(t))
	if j.whole != 0 || j.alone != 0 {
		t.Fatalf("failure-free run: %d whole-job restarts, %d recoveries", j.whole, j.alone)
	}
	return res
}

// sequential computes the application without messages: what every
// correct run must give.
func sequential() []uint64 {
	n := gridW * gridH
	v := make([]uint64, n)
	for r := range v {
		v[r] = mix(uint64(r))
	}
	for step := range steps {
		sent := make([]uint64, n)
		for r := range v {
			v[r] = mix(v[r] ^ uint64(step))
			sent[r] = v[r]
		}
		next := make([]uint64, n)
		for r := range v {
			_, _, left, up := neighbours(r)
			next[r] = mix(v[r] ^ mix(sent[left]) ^ mix(mix(^sent[up])))
		}
		v = next
	}
	return v
}

func same(t *testing.T, got, want []uint64) {
	t.Helper()
	for r := range want {
		if got[r] != want[r] {
			t.Errorf("rank %d: result %#x, want %#x (the failure-free run's)", r, got[r], want[r])
		}
	}
}

func TestFailureFreeMatchesSequential(t *testing.T) {
	same(t, reference(t), sequential())
}

// waitAcked waits until every peer victim received from knows that
// victim's log holds what victim delivered (the acks are in, so a log that
// loses records afterwards loses acknowledged messages), and until the
// receivers of the messages victim sent have them durable (so that the
// count of re-sends suppressed is exact).
func waitAcked(ctx context.Context, j *job, victim int, d *Rank) error {
	right, down, left, up := neighbours(victim)
	d.mu.Lock()
	st := d.send.State()
	wantAcked := map[int]uint64{left: d.recv.Durable(left), up: d.recv.Durable(up)}
	d.mu.Unlock()
	wait := func(p int, done func(pr *Rank) bool) error {
		pr := j.rank(p)
		for {
			pr.mu.Lock()
			ok, ch := done(pr), pr.changed
			pr.mu.Unlock()
			if ok {
				return nil
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	for p, want := range wantAcked {
		if err := wait(p, func(pr *Rank) bool { return pr.send.State().Acked[victim] >= want }); err != nil {
			return err
		}
	}
	for _, p := range []int{right, down} {
		if err := wait(p, func(pr *Rank) bool { return pr.recv.Durable(victim) >= st.Next[p] }); err != nil {
			return err
		}
	}
	return nil
}

// crashOnce fails victim once, at step, once the peers' acks are in;
// prepare then runs, after the victim's driver is closed.
func crashOnce(victim, step int, prepare func(j *job, d *Rank)) crashFn {
	return crashAt(victim, step, midStep, prepare)
}

func crashAt(victim, step int, where string, prepare func(j *job, d *Rank)) crashFn {
	var once sync.Once
	return func(j *job, r, s int, w string, d *Rank) bool {
		if r != victim || s != step || w != where {
			return false
		}
		hit := false
		once.Do(func() {
			hit = true
			// The messages the victim sent have left it (so that the
			// count of suppressed re-sends is exact).
			if err := d.Flush(testCtx(j.t)); err != nil {
				j.t.Errorf("flushing the victim: %v", err)
			}
			if err := waitAcked(testCtx(j.t), j, victim, d); err != nil {
				j.t.Errorf("waiting for acks: %v", err)
			}
			j.afterCrash = prepare
		})
		return hit
	}
}

func TestRankKilledMidComputationRecoversAlone(t *testing.T) {
	want := sequential()
	const victim = 4 // checkpoints every 7 steps: at 21, fails at 25
	var replayed, skipped, resent uint64
	pending := -1
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
		j.mu.Lock()
		defer j.mu.Unlock()
		s, err := DecodeSnapshot(j.saved[victim].snap, victim)
		if err != nil || j.saved[victim].step != 21 {
			t.Errorf("victim's checkpoint: step %d, %v; want step 21", j.saved[victim].step, err)
			return
		}
		pending = len(s.Pending)
	}))
	got := j.run(testCtx(t))
	same(t, got, want)
	if j.whole != 0 {
		t.Fatalf("%d whole-job restarts (%v), want 0", j.whole, j.cannot)
	}
	if j.alone != 1 {
		t.Errorf("%d ranks recovered alone, want 1", j.alone)
	}
	for r, n := range j.starts {
		want := 1
		if r == victim {
			want = 2
		}
		if n != want {
			t.Errorf("rank %d started %d times, want %d: only the failed rank may roll back", r, n, want)
		}
	}
	st := j.stats[victim]
	replayed, skipped, resent = st.Replayed, st.Skipped, st.Resent
	// Between its checkpoint at step 21 and its failure in step 25 the
	// victim received and consumed 2 messages a step (8: those delivered
	// before the checkpoint are in it, the others are logged; more if its
	// neighbours, which do not depend on it, ran ahead), and sent 2
	// a step plus one in step 25 (9, all flushed before the failure, so
	// all of which their receivers had: MemNet keeps a channel's order
	// across incarnations, so they had them before the hello).
	if pending < 0 || replayed+uint64(pending) < 8 {
		t.Errorf("victim replayed %d records and had %d in its checkpoint, want at least 8 together", replayed, pending)
	}
	if skipped != 9 {
		t.Errorf("victim skipped %d re-sent messages, want 9", skipped)
	}
	t.Logf("victim: replayed %d, skipped %d, resent %d; Δ_lp %v, Δ_lr %v", replayed, skipped, resent, st.LogProtect, st.LogReplay)
}

// As a runtime would: the ranks' checkpoints in files (Checkpoints), two
// copies each. The victim's node is lost with its cache when it fails: it
// recovers alone from its protector's copy. A second run damages both of
// its copies instead: it cannot serve (no wrong byte), and the job falls
// back to a whole-job restart; either way the result is the failure-free
// one.
func TestRankRecoversAloneFromItsOwnCheckpointFiles(t *testing.T) {
	want := sequential()
	const victim = 4 // checkpoints every 7 steps: at 21, fails at 25
	for _, tc := range []struct {
		name         string
		damage       func(t *testing.T, node, prot string)
		alone, whole int
	}{
		{"node lost", func(t *testing.T, node, _ string) { os.RemoveAll(node) }, 1, 0},
		{"both copies damaged", func(t *testing.T, node, prot string) {
			for _, d := range []string{node, prot} {
				path := ckptPath(d, victim)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
					return
				}
				b[len(b)/2] ^= 1
				os.WriteFile(path, b, 0o600)
			}
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			node := func(r int) string { return filepath.Join(root, fmt.Sprintf("node%d", r)) }
			damaged := false
			j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
				tc.damage(t, node(victim), node((victim+1)%j.n))
				damaged = true
			}))
			j.files = &Checkpoints{Dirs: func(r int) ([]string, error) {
				return []string{node(r), node((r + 1) % j.n)}, nil
			}}
			got := j.run(testCtx(t))
			same(t, got, want)
			if !damaged {
				t.Fatal("the victim never failed")
			}
			if j.alone != tc.alone || j.whole != tc.whole {
				t.Errorf("%d ranks recovered alone, %d whole-job restarts (%v); want %d and %d", j.alone, j.whole, j.cannot, tc.alone, tc.whole)
			}
			if tc.whole > 0 && (len(j.cannot) != 1 || !strings.Contains(j.cannot[0].Error(), "hash mismatch")) {
				t.Errorf("fallback for %v, want the victim's damaged checkpoint", j.cannot)
			}
		})
	}
}

func TestCorruptLogRecordFallsBackToWholeJob(t *testing.T) {
	const victim = 4
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
		j.mu.Lock()
		defer j.mu.Unlock()
		base, last, err := j.logs[victim].Bounds()
		if err != nil || last <= base {
			j.t.Errorf("victim's log: base %d, last %d, %v: want records to corrupt", base, last, err)
			return
		}
		j.logs[victim].(*logstore.Mem).Corrupt(last)
	}))
	got := j.run(testCtx(t))
	same(t, got, sequential())
	if j.whole != 1 {
		t.Fatalf("%d whole-job restarts, want 1", j.whole)
	}
	if len(j.cannot) != 1 || !errors.Is(j.cannot[0], msglog.ErrCorrupt) {
		t.Errorf("fallback's reasons: %v, want one wrapping msglog.ErrCorrupt", j.cannot)
	}
}

func TestLostLogOfAckedMessagesFallsBackToWholeJob(t *testing.T) {
	// The victim's protector loses its log as the victim fails: two
	// failures in one protection pair.
	const victim = 4
	j := newJob(t, crashOnce(victim, 25, func(j *job, d *Rank) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.logs[victim] = logstore.NewMem()
	}))
	got := j.run(testCtx(t))
	same(t, got, sequential())
	if j.whole != 1 {
		t.Fatalf("%d whole-job restarts, want 1", j.whole)
	}
	acked := false
	for _, err := range j.cannot {
		acked = acked || errors.Is(err, msglog.ErrAckedLost)
	}
	if !acked {
		t.Errorf("fallback's reasons: %v, want one wrapping msglog.ErrAckedLost", j.cannot)
	}
}

func TestRankKilledMidCheckpointRecoversAlone(t *testing.T) {
	// Rank 3 checkpoints every 6 steps; it fails after saving its
	// checkpoint of step 24 and before its log is truncated behind it.
	const victim = 3
	j := newJob(t, crashAt(victim, 23, midCheckpoint, nil))
	same(t, j.run(testCtx(t)), sequential())
	if j.whole != 0 || j.alone != 1 {
		t.Fatalf("%d whole-job restarts (%v), %d recovered alone; want 0 and 1", j.whole, j.cannot, j.alone)
	}
}

func TestRankKilledAgainDuringReexecutionRecoversAlone(t *testing.T) {
	// Rank 4 fails in step 25, restarts from step 21 and fails again in
	// step 23 of its re-execution, while it is regenerating messages its
	// receivers have: it starts again from the same checkpoint.
	const victim = 4
	first := crashOnce(victim, 25, nil)
	second := crashOnce(victim, 23, nil)
	failsTwiceRecoversAlone(t, victim, first, second)
}

func TestRankKilledAgainRightAfterItsReplayRecoversAlone(t *testing.T) {
	// Rank 4 fails in step 25 and again as soon as its recovery is done:
	// its peers have sent again what it lost, which its log now holds
	// behind the first replay's records; the second replay gives them in
	// the same order.
	const victim = 4
	first := crashOnce(victim, 25, nil)
	second := crashAt(victim, 21, afterReplay, nil)
	failsTwiceRecoversAlone(t, victim, first, second)
}

// failsTwiceRecoversAlone runs the job with victim failing at first,
// then at second, and checks that both failures were recovered alone
// and that the result is the failure-free one.
func failsTwiceRecoversAlone(t *testing.T, victim int, first, second crashFn) {
	t.Helper()
	fired := 0
	j := newJob(t, func(j *job, r, s int, w string, d *Rank) bool {
		if r != victim { // fired is the victim's goroutine's
			return false
		}
		if fired == 0 && first(j, r, s, w, d) || fired == 1 && second(j, r, s, w, d) {
			fired++
			return true
		}
		return false
	})
	same(t, j.run(testCtx(t)), sequential())
	if fired != 2 || j.whole != 0 || j.alone != 2 || j.starts[victim] != 3 {
		t.Fatalf("%d failures, %d whole-job restarts (%v), %d recovered alone, victim started %d times; want 2, 0, 2, 3", fired, j.whole, j.cannot, j.alone, j.starts[victim])
	}
}
