package redundancy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

var errDiskFull = errors.New("disk full")

// failAfter accepts limit bytes, then fails every write.
type failAfter struct {
	w     io.Writer
	limit int
	n     int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		take := max(0, f.limit-f.n)
		f.n += take
		f.w.Write(p[:take])
		return take, errDiskFull
	}
	f.n += len(p)
	return f.w.Write(p)
}

// A replacement whose disk fails part way through its data fails with the
// write's error (not the cancellation it causes), writes nothing after the
// failure, and no member hangs.
func TestRebuildWriteErrorFails(t *testing.T) {
	for _, scheme := range []string{"xor:4", "rs:4+2"} {
		t.Run(scheme, func(t *testing.T) {
			l := layoutOf(t, scheme)
			n := l.Members()
			data := randomData(rand.New(rand.NewPCG(41, 42)), slices.Repeat([]int{5000}, n))
			parity := encodeSet(t, l, data, 64)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			var out bytes.Buffer
			fw := &failAfter{w: &out, limit: 1000}
			errs := inproc.New(n).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
				local := Local{Size: int64(len(data[me]))}
				if me == 1 {
					local.DataOut, local.ParityOut = fw, io.Discard
				} else {
					local.Data, local.Parity = bytes.NewReader(data[me]), bytes.NewReader(parity[me])
				}
				return Rebuild(ctx, l, []int{1}, me, ep, local, 5000, WithBlockSize(64))
			})
			if !errors.Is(errs[1], errDiskFull) {
				t.Fatalf("replacement: %v, want the write error", errs[1])
			}
			if fw.n != 1000 || out.Len() != 1000 {
				t.Errorf("%d bytes reached the failing writer (%d kept), want exactly its 1000", fw.n, out.Len())
			}
			if !bytes.Equal(out.Bytes(), data[1][:1000]) {
				t.Error("the bytes written before the failure are not the member's data")
			}
			for i, err := range errs {
				if errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("member %d hung: %v", i, err)
				}
			}
		})
	}
}

// A survivor whose data is shorter than its size (a truncated file) fails
// the rebuild of every member that depends on it.
func TestRebuildTruncatedSurvivor(t *testing.T) {
	l := layoutOf(t, "xor:4")
	data := randomData(rand.New(rand.NewPCG(43, 44)), []int{3000, 3000, 3000, 3000})
	parity := encodeSet(t, l, data, 64)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var written atomic.Int64
	errs := inproc.New(4).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		local := Local{Size: 3000}
		switch me {
		case 1:
			local.DataOut = writerFunc(func(p []byte) (int, error) { written.Add(int64(len(p))); return len(p), nil })
			local.ParityOut = local.DataOut
		case 2:
			local.Data, local.Parity = bytes.NewReader(data[me][:1700]), bytes.NewReader(parity[me])
		default:
			local.Data, local.Parity = bytes.NewReader(data[me]), bytes.NewReader(parity[me])
		}
		return Rebuild(ctx, l, []int{1}, me, ep, local, 3000, WithBlockSize(64))
	})
	if !errors.Is(errs[2], io.ErrUnexpectedEOF) {
		t.Errorf("truncated survivor: %v, want ErrUnexpectedEOF", errs[2])
	}
	if errs[1] == nil || errors.Is(errs[1], context.DeadlineExceeded) {
		t.Errorf("replacement: %v, want a prompt error", errs[1])
	}
	if w := written.Load(); w >= 3000+1000 {
		t.Errorf("the replacement wrote all %d bytes although a source was truncated", w)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Cancelling the context mid-rebuild ends every member promptly, and a
// survivor's read-ahead stops with it: nothing reads a member's files once
// Rebuild has returned (its caller closes them).
func TestCancelMidRebuild(t *testing.T) {
	var total atomic.Int64
	reads := make([]atomic.Int64, 6) // one a member of rs(4+2)
	cancelledRebuild(t, 45, func(me int, local *Local, hold func()) {
		var big atomic.Int64
		hook := func() {
			if total.Add(1) == 30 {
				hold()
			}
			reads[me].Add(1)
		}
		local.Data = checkedReader{r: local.Data, limit: 64, big: &big, hook: hook}
		local.Parity = checkedReader{r: local.Parity, limit: 64, big: &big, hook: hook}
	}, func(me int) int64 { return reads[me].Load() }, "reads")
}

// cancelledRebuild rebuilds members 0 and 3 of an rs(4+2) set of 6000-byte
// members (their data drawn from seed) and cancels it part way through.
// survivor sets up a survivor's local, whose Data and Parity already read
// its files; the call of its that cancels calls hold, which cancels the
// set and holds on until the member's Rebuild has returned, or a second
// has passed (how long a Rebuild that waits for that call takes here).
// cancelledRebuild fails the test unless every member ended promptly with
// the cancellation and count(me), what survivor counts of member me's
// work (named what), did not grow after its Rebuild returned.
func cancelledRebuild(t *testing.T, seed uint64, survivor func(me int, local *Local, hold func()), count func(me int) int64, what string) {
	t.Helper()
	l := layoutOf(t, "rs:4+2")
	n := l.Members()
	data := randomData(rand.New(rand.NewPCG(seed, seed+1)), slices.Repeat([]int{6000}, n))
	parity := encodeSet(t, l, data, 64)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	setCtx, stop := context.WithCancel(ctx)
	atReturn := make([]int64, n)
	returned := make([]chan struct{}, n)
	for i := range returned {
		returned[i] = make(chan struct{})
	}
	errs := inproc.New(n).Run(setCtx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		local := Local{Size: 6000}
		if me == 0 || me == 3 {
			local.DataOut, local.ParityOut = io.Discard, io.Discard
		} else {
			local.Data, local.Parity = bytes.NewReader(data[me]), bytes.NewReader(parity[me])
			survivor(me, &local, func() {
				stop()
				select {
				case <-returned[me]:
				case <-time.After(time.Second):
				}
			})
		}
		err := Rebuild(ctx, l, []int{0, 3}, me, ep, local, 6000, WithBlockSize(64))
		atReturn[me] = count(me)
		close(returned[me])
		return err
	})
	if ctx.Err() != nil {
		t.Fatal("the rebuild hung after its context was cancelled")
	}
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrPeerClosed) {
			t.Errorf("member %d: %v, want the cancellation", i, err)
		}
		if got := count(i); got != atReturn[i] {
			t.Errorf("member %d: %d %s after Rebuild returned", i, got-atReturn[i], what)
		}
	}
}

// A survivor's Seen gets exactly the bytes it read for the rebuild, at
// their offsets: with one member lost from xor:4 every survivor reads its
// whole data and parity once, so what Seen gets rebuilds both, each byte
// once. With rs(4+2) and two lost, Seen never gets a byte other than the
// file's own.
func TestRebuildSeen(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		scheme string
		lost   []int
		whole  bool // every survivor sees all of its bytes, each once
	}{{"xor:4", []int{2}, true}, {"rs:4+2", []int{0, 3}, false}} {
		l := layoutOf(t, tc.scheme)
		n := l.Members()
		const bs = 1000
		data := randomData(rng, memberSizes(n, bs, rng))
		parity := encodeSet(t, l, data, bs)
		type copyOf struct {
			data, parity []byte
			count        []int // times each data byte was seen
		}
		seen := make([]copyOf, n)
		for me := range seen {
			seen[me] = copyOf{make([]byte, len(data[me])), make([]byte, len(parity[me])), make([]int, len(data[me]))}
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		outs := make([]bytes.Buffer, n)
		pouts := make([]bytes.Buffer, n)
		errs := inproc.New(n).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
			local := Local{Size: int64(len(data[me]))}
			if slices.Contains(tc.lost, me) {
				local.DataOut, local.ParityOut = &outs[me], &pouts[me]
			} else {
				local.Data, local.Parity = bytes.NewReader(data[me]), bytes.NewReader(parity[me])
				local.Seen = func(isParity bool, off int64, b []byte) {
					if isParity {
						copy(seen[me].parity[off:], b)
						return
					}
					copy(seen[me].data[off:], b)
					for i := range b {
						seen[me].count[off+int64(i)]++
					}
				}
			}
			return Rebuild(ctx, l, tc.lost, me, ep, local, maxLen(data), WithBlockSize(bs))
		})
		cancel()
		for me, err := range errs {
			if err != nil {
				t.Fatalf("%s: member %d: %v", tc.scheme, me, err)
			}
		}
		for me := range n {
			if slices.Contains(tc.lost, me) {
				if !bytes.Equal(outs[me].Bytes(), data[me]) {
					t.Errorf("%s: member %d rebuilt wrong", tc.scheme, me)
				}
				continue
			}
			s := seen[me]
			for i, c := range s.count {
				if c > 0 && s.data[i] != data[me][i] {
					t.Fatalf("%s: member %d: seen byte %d differs from the data", tc.scheme, me, i)
				}
				if tc.whole && c != 1 {
					t.Fatalf("%s: member %d: data byte %d seen %d times, want once", tc.scheme, me, i, c)
				}
			}
			if tc.whole && !bytes.Equal(s.parity, parity[me]) {
				t.Errorf("%s: member %d: seen parity differs", tc.scheme, me)
			}
		}
	}
}

// A rebuild cancelled while a survivor's Seen is at work returns only
// once Seen is done: no call of Seen runs on after Rebuild returned (the
// engine reads the verifier Seen fills as soon as Rebuild returns). The
// call that cancels holds on until its member's Rebuild returned, or a
// second passed (how long a Rebuild that waits for Seen takes here): a
// Rebuild that did not wait shows a call ending after it returned.
func TestSeenDoneWhenRebuildReturns(t *testing.T) {
	var total atomic.Int64
	heldEnded := make(chan struct{}) // the call that cancels has ended
	ended := make([]atomic.Int64, 6) // one a member of rs(4+2)
	cancelledRebuild(t, 47, func(me int, local *Local, hold func()) {
		local.Seen = func(bool, int64, []byte) {
			if total.Add(1) == 20 {
				hold()
				defer close(heldEnded)
			}
			ended[me].Add(1)
		}
	}, func(me int) int64 { return ended[me].Load() }, "calls of Seen ended")
	if total.Load() < 20 {
		t.Fatalf("Seen was called %d times: the cancellation never happened", total.Load())
	}
	select { // already ended, unless Rebuild returned without waiting for it
	case <-heldEnded:
	case <-time.After(testTimeout):
		t.Fatal("the call of Seen that cancelled never ended")
	}
}
