package uncoord

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
)

// pair is two ranks exchanging a message each way every step, rank 0
// checkpointing at step ckptAt; its protector is then lost with its log
// (a new, empty log stands where it was), and, with reprotect, rank 0
// re-protects at once (Reprotect: a checkpoint at its new protector and
// a new log there). Rank 0 is then killed at step crashAt and restarted
// alone from its newest checkpoint and the log its protector holds.
type pair struct {
	reprotect bool
	mu        sync.Mutex
	log       logstore.Store // rank 0's, at its protector
	saved     *saved         // rank 0's newest checkpoint
}

const (
	pairSteps          = 14
	pairCkpt, pairLost = 3, 6
	pairCrash          = 10
)

func (p *pair) run(ctx context.Context, t *testing.T) (res [2]uint64, err error) {
	net := NewMemNet()
	p.log = logstore.NewMem()
	logs := [2]logstore.Store{p.log, logstore.NewMem()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var errs [2]error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			restarted := false
			for {
				var err error
				res[r], err = p.rank(ctx, net, r, logs[r], restarted, done)
				if errors.Is(err, errCrashed) {
					restarted = true
					p.mu.Lock()
					logs[r] = p.log
					p.mu.Unlock()
					continue
				}
				if r == 0 {
					close(done) // rank 1 may leave
				}
				errs[r] = err
				return
			}
		}()
	}
	wg.Wait()
	if errs[1] != nil && !errors.Is(errs[1], context.Canceled) && !errors.Is(errs[1], ErrCannotServe) {
		t.Fatalf("rank 1: %v", errs[1])
	}
	if errs[0] == nil {
		// Rank 1's refusal is the other side of rank 0's failure.
		return res, errs[1]
	}
	return res, errs[0]
}

func (p *pair) rank(ctx context.Context, net *MemNet, r int, log logstore.Store, restarted bool, done <-chan struct{}) (uint64, error) {
	from := saved{v: mix(uint64(r))}
	var snap []byte
	if restarted {
		p.mu.Lock()
		from, snap = *p.saved, p.saved.snap
		p.mu.Unlock()
	}
	d, err := Start(ctx, Config{Rank: r, Size: 2, Net: net.Endpoint(r), Log: log, Restarted: restarted, Saved: snap})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	v := from.v
	for step := from.step; step < pairSteps; step++ {
		v = mix(v ^ uint64(step))
		if err := d.Send(ctx, 1-r, payload(v, step)); err != nil {
			return 0, err
		}
		a, err := d.Recv(ctx, 1-r)
		if err != nil {
			return 0, err
		}
		v = mix(v ^ mix(binary.LittleEndian.Uint64(a)))
		if r != 0 || restarted {
			continue
		}
		switch step + 1 {
		case pairCkpt:
			s := d.Checkpoint()
			p.mu.Lock()
			p.saved = &saved{step: step + 1, v: v, snap: s.Bytes()}
			p.mu.Unlock()
			if err := d.Protected(s); err != nil {
				return 0, err
			}
		case pairLost:
			// The protector's node lost with the log: its replacement
			// holds an empty one.
			p.mu.Lock()
			p.log = logstore.NewMem()
			p.mu.Unlock()
			if !p.reprotect {
				break
			}
			err := d.Reprotect(func(base uint64) (logstore.Store, error) {
				l := logstore.NewMemAt(base)
				p.mu.Lock()
				p.log = l
				p.mu.Unlock()
				return l, nil
			}, func(s Snapshot) error {
				p.mu.Lock()
				p.saved = &saved{step: step + 1, v: v, snap: s.Bytes()}
				p.mu.Unlock()
				return nil
			})
			if err != nil {
				return 0, err
			}
		case pairCrash:
			net.Kill(0)
			d.Close()
			return 0, errCrashed
		}
	}
	if err := d.Flush(ctx); err != nil {
		return 0, err
	}
	if r == 0 {
		return v, nil
	}
	// Rank 1 stays to answer a restart of rank 0 until rank 0 is done.
	select {
	case <-done:
	case <-ctx.Done():
	}
	return v, nil
}

// A rank whose protector was lost re-protects (a checkpoint at its new
// protector, a new log there): killed afterwards, it recovers alone from
// them, with the failure-free result. Without re-protecting, the same
// failure cannot be served (its log is gone: rank 1 finds acknowledged
// messages lost) and must fall back to a whole-job restart.
func TestReprotectAfterProtectorLoss(t *testing.T) {
	ctx := testCtx(t)
	// The failure-free result: no failure, no loss.
	var want [2]uint64
	for r := range 2 {
		v := mix(uint64(r))
		o := mix(uint64(1 - r))
		for step := range pairSteps {
			v = mix(v ^ uint64(step))
			o = mix(o ^ uint64(step))
			v, o = mix(v^mix(binary.LittleEndian.Uint64(payload(o, step)))), mix(o^mix(binary.LittleEndian.Uint64(payload(v, step))))
		}
		want[r] = v
	}
	p := &pair{reprotect: true}
	got, err := p.run(ctx, t)
	if err != nil {
		t.Fatalf("re-protected: rank 0: %v", err)
	}
	if got != want {
		t.Errorf("re-protected: result %x, want the failure-free %x", got, want)
	}
	if p.saved.step != pairLost {
		t.Errorf("rank 0 restarted from its checkpoint of step %d, want the re-protection's, %d", p.saved.step, pairLost)
	}
	if base, _, _ := p.log.Bounds(); base != 0 && base < uint64(pairLost-1) {
		t.Errorf("the new log's base %d: behind the re-protection's checkpoint", base)
	}

	p = &pair{}
	if _, err := p.run(ctx, t); !errors.Is(err, ErrCannotServe) {
		t.Errorf("not re-protected: rank 0's recovery: %v, want ErrCannotServe", err)
	}
}
