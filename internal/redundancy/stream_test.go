package redundancy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/ckpt/ckpt/internal/redundancy"
	"github.com/ckpt/ckpt/internal/redundancy/inproc"
)

// testTimeout bounds every set operation of the tests: a hang fails the test
// instead of the run.
const testTimeout = 30 * time.Second

func layoutOf(t testing.TB, scheme string) Layout {
	t.Helper()
	s, err := ParseScheme(scheme)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// randomData returns n members' data of the given sizes; every byte is
// non-zero, so padding mistakes show.
func randomData(rng *rand.Rand, sizes []int) [][]byte {
	out := make([][]byte, len(sizes))
	for i, sz := range sizes {
		out[i] = make([]byte, sz)
		for j := range out[i] {
			out[i][j] = byte(rng.IntN(255) + 1)
		}
	}
	return out
}

func maxLen(data [][]byte) int64 {
	m := 0
	for _, d := range data {
		m = max(m, len(d))
	}
	return int64(m)
}

// referenceParity computes every member's parity file the simple way: whole
// padded chunks in memory, one codec call per row.
func referenceParity(t testing.TB, l Layout, data [][]byte) [][]byte {
	n, k, m := l.Members(), l.DataShards(), l.ParityShards()
	C := l.ChunkSize(maxLen(data))
	parity := make([][]byte, n)
	for i := range parity {
		parity[i] = make([]byte, l.ParitySize(maxLen(data)))
	}
	if C == 0 || m == 0 {
		return parity
	}
	codec, err := NewCodec(k, m)
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(i, c int) []byte {
		out := make([]byte, C)
		lo := min(int64(c)*C, int64(len(data[i])))
		hi := min(int64(c+1)*C, int64(len(data[i])))
		copy(out, data[i][lo:hi])
		return out
	}
	for r := 0; r < n; r++ {
		ds := make([][]byte, k)
		for c := range ds {
			ds[c] = chunk(l.DataMember(r, c), c)
		}
		ps := make([][]byte, m)
		for p := range ps {
			ps[p] = parity[l.ParityHolder(r, p)][int64(p)*C : int64(p+1)*C]
		}
		if err := codec.Encode(ds, ps); err != nil {
			t.Fatal(err)
		}
	}
	return parity
}

// checkedReader is a member's data that fails the test if anything reads
// more than one block at a time.
type checkedReader struct {
	r     io.ReaderAt
	limit int
	big   *atomic.Int64
	hook  func() // called before every read, if set
}

func (c checkedReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) > c.limit {
		c.big.Store(int64(len(p)))
	}
	if c.hook != nil {
		c.hook()
	}
	return c.r.ReadAt(p, off)
}

// checkedWriter fails the test if anything writes more than a block at once.
type checkedWriter struct {
	w     *bytes.Buffer
	limit int
	big   *atomic.Int64
}

func (c checkedWriter) Write(p []byte) (int, error) {
	if len(p) > c.limit {
		c.big.Store(int64(len(p)))
	}
	return c.w.Write(p)
}

// encodeSet runs Encode on every member of a set and returns the parity
// files.
func encodeSet(t testing.TB, l Layout, data [][]byte, bs int) [][]byte {
	t.Helper()
	n := l.Members()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	nw := inproc.New(n)
	out := make([]bytes.Buffer, n)
	var big atomic.Int64
	errs := nw.Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		maxSize := 0
		for _, d := range data {
			maxSize = max(maxSize, len(d))
		}
		r := checkedReader{r: bytes.NewReader(data[me]), limit: bs, big: &big}
		w := checkedWriter{w: &out[me], limit: bs, big: &big}
		return Encode(ctx, l, me, ep, r, int64(len(data[me])), int64(maxSize), w, WithBlockSize(bs))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("encode member %d: %v", i, err)
		}
	}
	if b := big.Load(); b > 0 {
		t.Fatalf("a read or write of %d bytes, more than a block of %d", b, bs)
	}
	parity := make([][]byte, n)
	for i := range out {
		parity[i] = out[i].Bytes()
	}
	return parity
}

// rebuildSet runs Rebuild on every member: survivors with their files, the
// lost members with empty buffers and their original sizes.
func rebuildSet(t testing.TB, l Layout, data, parity [][]byte, lost []int, bs int) (dataOut, parityOut []bytes.Buffer, errs []error) {
	t.Helper()
	n := l.Members()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	nw := inproc.New(n)
	dataOut = make([]bytes.Buffer, n)
	parityOut = make([]bytes.Buffer, n)
	var big atomic.Int64
	errs = nw.Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		local := Local{Size: int64(len(data[me]))}
		if slices.Contains(lost, me) {
			local.DataOut = checkedWriter{w: &dataOut[me], limit: bs, big: &big}
			local.ParityOut = checkedWriter{w: &parityOut[me], limit: bs, big: &big}
		} else {
			local.Data = checkedReader{r: bytes.NewReader(data[me]), limit: bs, big: &big}
			local.Parity = checkedReader{r: bytes.NewReader(parity[me]), limit: bs, big: &big}
		}
		return Rebuild(ctx, l, lost, me, ep, local, maxLen(data), WithBlockSize(bs))
	})
	if b := big.Load(); b > 0 {
		t.Fatalf("a read or write of %d bytes, more than a block of %d", b, bs)
	}
	for _, err := range errs {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("rebuild hung: %v", err)
		}
	}
	return dataOut, parityOut, errs
}

func checkRebuilt(t *testing.T, l Layout, data, parity [][]byte, lost []int, bs int) {
	t.Helper()
	dataOut, parityOut, errs := rebuildSet(t, l, data, parity, lost, bs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("lost %v: member %d: %v", lost, i, err)
		}
	}
	for _, x := range lost {
		if !bytes.Equal(dataOut[x].Bytes(), data[x]) {
			t.Fatalf("lost %v: member %d's data rebuilt wrong (%d bytes, want %d)", lost, x, dataOut[x].Len(), len(data[x]))
		}
		if !bytes.Equal(parityOut[x].Bytes(), parity[x]) {
			t.Fatalf("lost %v: member %d's parity rebuilt wrong (%d bytes, want %d)", lost, x, parityOut[x].Len(), len(parity[x]))
		}
	}
}

// forSubsets calls fn with every non-empty subset of 0..n−1 of at most max
// members, or with limit random ones when there are more.
func forSubsets(rng *rand.Rand, n, most, limit int, fn func([]int)) {
	var all [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(all) > limit {
			return
		}
		if len(cur) > 0 {
			all = append(all, slices.Clone(cur))
		}
		if len(cur) == most {
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
	if len(all) > limit {
		all = all[:0]
		for range limit {
			all = append(all, rng.Perm(n)[:rng.IntN(most)+1])
		}
	}
	for _, s := range all {
		fn(s)
	}
}

var testSchemes = []string{"single", "partner", "xor:2", "xor:3", "xor:4", "xor:8", "rs:2+1", "rs:4+2", "rs:8+2", "rs:3+3"}

// memberSizes gives the n members different sizes: empty, one byte, odd
// sizes, and one more than several blocks of bs.
func memberSizes(n, bs int, rng *rand.Rand) []int {
	pattern := []int{5*bs + 17, 0, 1, 777, 3*bs - 1, 2, bs, 1234, bs + 1, 4099}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = pattern[i%len(pattern)]
	}
	rng.Shuffle(n, func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
	return sizes
}

func TestEncodeRebuildBitExact(t *testing.T) {
	const bs = 256
	rng := rand.New(rand.NewPCG(11, 12))
	for _, scheme := range testSchemes {
		t.Run(scheme, func(t *testing.T) {
			l := layoutOf(t, scheme)
			data := randomData(rng, memberSizes(l.Members(), bs, rng))
			parity := encodeSet(t, l, data, bs)
			want := referenceParity(t, l, data)
			for i := range parity {
				if int64(len(parity[i])) != l.ParitySize(maxLen(data)) {
					t.Fatalf("member %d: parity of %d bytes, want %d", i, len(parity[i]), l.ParitySize(maxLen(data)))
				}
				if !bytes.Equal(parity[i], want[i]) {
					t.Fatalf("member %d: parity differs from the reference", i)
				}
			}
			forSubsets(rng, l.Members(), l.ParityShards(), 100, func(lost []int) {
				checkRebuilt(t, l, data, parity, lost, bs)
			})
		})
	}
}

// Partner parity is the partner's data, zero-padded to the larger size.
func TestPartnerIsCopy(t *testing.T) {
	l := layoutOf(t, "partner")
	data := [][]byte{[]byte("member zero's checkpoint"), []byte("one")}
	parity := encodeSet(t, l, data, 5)
	if string(parity[1]) != string(data[0]) {
		t.Errorf("member 1 holds %q, want member 0's data", parity[1])
	}
	if want := append([]byte("one"), make([]byte, len(data[0])-3)...); !bytes.Equal(parity[0], want) {
		t.Errorf("member 0 holds %q, want member 1's data padded", parity[0])
	}
}

// The block size changes the messages, never the files.
func TestBlockSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, scheme := range []string{"partner", "xor:4", "rs:3+3"} {
		l := layoutOf(t, scheme)
		data := randomData(rng, []int{300, 0, 1, 299, 5, 64}[:l.Members()])
		want := referenceParity(t, l, data)
		for _, bs := range []int{1, 7, 64, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", scheme, bs), func(t *testing.T) {
				parity := encodeSet(t, l, data, bs)
				for i := range parity {
					if !bytes.Equal(parity[i], want[i]) {
						t.Fatalf("member %d: parity differs from the reference", i)
					}
				}
				checkRebuilt(t, l, data, parity, []int{0}, bs)
				checkRebuilt(t, l, data, parity, []int{l.Members() - 1}, bs)
			})
		}
	}
}

// Members larger than the default block of 1 MiB.
func TestDefaultBlockLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("megabytes per member")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, scheme := range []string{"partner", "xor:4", "rs:4+2"} {
		t.Run(scheme, func(t *testing.T) {
			l := layoutOf(t, scheme)
			sizes := []int{5<<20/2 + 3, 0, 1, 1<<20 + 1, 3 << 20, 12345}[:l.Members()]
			data := randomData(rng, sizes)
			parity := encodeSet(t, l, data, DefaultBlockSize)
			want := referenceParity(t, l, data)
			for i := range parity {
				if !bytes.Equal(parity[i], want[i]) {
					t.Fatalf("member %d: parity differs from the reference", i)
				}
			}
			forSubsets(rng, l.Members(), l.ParityShards(), 3, func(lost []int) {
				checkRebuilt(t, l, data, parity, lost, DefaultBlockSize)
			})
		})
	}
}

func TestTooManyLost(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, scheme := range testSchemes {
		t.Run(scheme, func(t *testing.T) {
			l := layoutOf(t, scheme)
			data := randomData(rng, memberSizes(l.Members(), 64, rng))
			parity := encodeSet(t, l, data, 64)
			lost := rng.Perm(l.Members())[:l.ParityShards()+1]
			dataOut, parityOut, errs := rebuildSet(t, l, data, parity, lost, 64)
			for i, err := range errs {
				if !errors.Is(err, ErrTooManyLost) {
					t.Errorf("member %d: %v, want ErrTooManyLost", i, err)
				}
				if dataOut[i].Len() != 0 || parityOut[i].Len() != 0 {
					t.Errorf("member %d wrote %d+%d bytes", i, dataOut[i].Len(), parityOut[i].Len())
				}
			}
		})
	}
}

// A replacement given a size smaller than the original finds data in what
// should be padding.
func TestRebuildWrongSize(t *testing.T) {
	l := layoutOf(t, "xor:3")
	data := randomData(rand.New(rand.NewPCG(19, 20)), []int{100, 90, 50})
	parity := encodeSet(t, l, data, 16)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	errs := inproc.New(3).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		local := Local{Size: int64(len(data[me])), Data: bytes.NewReader(data[me]), Parity: bytes.NewReader(parity[me])}
		if me == 1 {
			local = Local{Size: 80, DataOut: io.Discard, ParityOut: io.Discard}
		}
		return Rebuild(ctx, l, []int{1}, me, ep, local, 100, WithBlockSize(16))
	})
	if !errors.Is(errs[1], ErrInconsistent) {
		t.Errorf("replacement with a short size: %v, want ErrInconsistent", errs[1])
	}
}

// killSet runs op on every member with member victim's endpoint closed on
// its read number killAt, and checks that the members in mustFail (all if
// nil) fail promptly and that no member hangs.
func killSet(t *testing.T, n, victim int, killAt int64, mustFail []int, op func(ctx context.Context, me int, ep *inproc.Endpoint, hook func()) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	start := time.Now()
	var reads atomic.Int64
	errs := inproc.New(n, inproc.WithDepth(2)).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		var hook func()
		if me == victim {
			hook = func() {
				if reads.Add(1) == killAt {
					ep.Close()
				}
			}
		}
		return op(ctx, me, ep, hook)
	})
	if reads.Load() < killAt {
		t.Fatalf("the victim read only %d times, the kill was at %d", reads.Load(), killAt)
	}
	for i, err := range errs {
		switch {
		case err == nil && (mustFail == nil || slices.Contains(mustFail, i)):
			t.Errorf("member %d succeeded after member %d died", i, victim)
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded):
			t.Errorf("member %d hung: %v", i, err)
		case i != victim && !errors.Is(err, ErrPeerClosed):
			t.Errorf("member %d: %v, want an error wrapping ErrPeerClosed", i, err)
		}
	}
	if d := time.Since(start); d > testTimeout/2 {
		t.Errorf("failing took %v", d)
	}
}

func TestKillMidEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, scheme := range []string{"partner", "xor:3", "xor:8", "rs:4+2", "rs:3+3"} {
		l := layoutOf(t, scheme)
		n := l.Members()
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = 4000 + i
		}
		data := randomData(rng, sizes)
		for _, victim := range []int{0, n - 1} {
			t.Run(fmt.Sprintf("%s/%d", scheme, victim), func(t *testing.T) {
				killSet(t, n, victim, 3, nil, func(ctx context.Context, me int, ep *inproc.Endpoint, hook func()) error {
					var big atomic.Int64
					r := checkedReader{r: bytes.NewReader(data[me]), limit: 64, big: &big, hook: hook}
					return Encode(ctx, l, me, ep, r, int64(len(data[me])), maxLen(data), io.Discard, WithBlockSize(64))
				})
			})
		}
	}
}

func TestKillMidRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, scheme := range []string{"partner", "xor:4", "rs:4+2"} {
		l := layoutOf(t, scheme)
		n := l.Members()
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = 4000 - i
		}
		data := randomData(rng, sizes)
		parity := encodeSet(t, l, data, 64)
		lost := []int{1}
		t.Run(scheme, func(t *testing.T) {
			// The replacement must fail; a survivor whose part was done
			// before the kill may succeed (the driver then agrees on the
			// outcome), but none may hang.
			killSet(t, n, 0, 5, []int{0, 1}, func(ctx context.Context, me int, ep *inproc.Endpoint, hook func()) error {
				var big atomic.Int64
				local := Local{Size: int64(len(data[me]))}
				if me == 1 {
					local.DataOut, local.ParityOut = io.Discard, io.Discard
				} else {
					local.Data = checkedReader{r: bytes.NewReader(data[me]), limit: 64, big: &big, hook: hook}
					local.Parity = checkedReader{r: bytes.NewReader(parity[me]), limit: 64, big: &big, hook: hook}
				}
				return Rebuild(ctx, l, lost, me, ep, local, maxLen(data), WithBlockSize(64))
			})
		})
	}
}

// Cancelling the context mid-encode ends every member.
func TestCancelMidEncode(t *testing.T) {
	l := layoutOf(t, "rs:4+2")
	data := randomData(rand.New(rand.NewPCG(29, 30)), []int{5000, 5000, 5000, 5000, 5000, 5000})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	setCtx, stop := context.WithCancel(ctx)
	var reads atomic.Int64
	errs := inproc.New(6).Run(setCtx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		var big atomic.Int64
		r := checkedReader{r: bytes.NewReader(data[me]), limit: 64, big: &big, hook: func() {
			if reads.Add(1) == 20 {
				stop()
			}
		}}
		return Encode(ctx, l, me, ep, r, 5000, 5000, io.Discard, WithBlockSize(64))
	})
	for i, err := range errs {
		if err == nil || ctx.Err() != nil {
			t.Errorf("member %d: %v, want a prompt error", i, err)
		}
	}
}

// A member whose data cannot be read fails, and so do its peers.
func TestReadErrorFailsSet(t *testing.T) {
	l := layoutOf(t, "rs:4+2")
	data := randomData(rand.New(rand.NewPCG(25, 26)), []int{500, 500, 500, 500, 500, 500})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	errs := inproc.New(6).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		var r io.ReaderAt = bytes.NewReader(data[me])
		size := int64(len(data[me]))
		if me == 2 {
			r = bytes.NewReader(data[me][:300]) // shorter than it claims
		}
		return Encode(ctx, l, me, ep, r, size, 500, io.Discard, WithBlockSize(32))
	})
	if !errors.Is(errs[2], io.ErrUnexpectedEOF) {
		t.Errorf("member 2: %v, want ErrUnexpectedEOF", errs[2])
	}
	for i, err := range errs {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("member %d: %v, want a prompt error", i, err)
		}
	}
}

// Members that disagree on the block size get errors, never wrong parity.
func TestMismatchedBlockSize(t *testing.T) {
	l := layoutOf(t, "xor:4")
	data := randomData(rand.New(rand.NewPCG(27, 28)), []int{3000, 3000, 3000, 3000})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	errs := inproc.New(4).Run(ctx, func(ctx context.Context, me int, ep *inproc.Endpoint) error {
		bs := 100
		if me == 2 {
			bs = 128
		}
		return Encode(ctx, l, me, ep, bytes.NewReader(data[me]), 3000, 3000, io.Discard, WithBlockSize(bs))
	})
	for i, err := range errs {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("member %d: %v, want a prompt error", i, err)
		}
	}
}

func TestArgumentErrors(t *testing.T) {
	ctx := context.Background()
	l := layoutOf(t, "xor:3")
	ep := inproc.New(3).Endpoint(0)
	r := bytes.NewReader(make([]byte, 10))
	rs, _ := NewCodec(2, 2)
	cases := map[string]error{
		"zero layout":     Encode(ctx, Layout{}, 0, ep, r, 10, 10, io.Discard),
		"member -1":       Encode(ctx, l, -1, ep, r, 10, 10, io.Discard),
		"member 3":        Encode(ctx, l, 3, ep, r, 10, 10, io.Discard),
		"no transport":    Encode(ctx, l, 0, nil, r, 10, 10, io.Discard),
		"size > max":      Encode(ctx, l, 0, ep, r, 11, 10, io.Discard),
		"negative size":   Encode(ctx, l, 0, ep, r, -1, 10, io.Discard),
		"negative max":    Encode(ctx, l, 0, ep, r, 0, -1, io.Discard),
		"no data":         Encode(ctx, l, 0, ep, nil, 10, 10, io.Discard),
		"no parity":       Encode(ctx, l, 0, ep, r, 10, 10, nil),
		"block 0":         Encode(ctx, l, 0, ep, r, 10, 10, io.Discard, WithBlockSize(0)),
		"wrong codec":     Encode(ctx, l, 0, ep, r, 10, 10, io.Discard, WithCodec(rs)),
		"too many blocks": Encode(ctx, l, 0, ep, r, 10, 1<<40, io.Discard, WithBlockSize(1)),
		"lost twice":      Rebuild(ctx, l, []int{1, 1}, 0, ep, Local{Size: 10, Data: r, Parity: r}, 10),
		"lost 3":          Rebuild(ctx, l, []int{3}, 0, ep, Local{Size: 10, Data: r, Parity: r}, 10),
		"no writers":      Rebuild(ctx, l, []int{0}, 0, ep, Local{Size: 10}, 10),
		"no files":        Rebuild(ctx, l, []int{1}, 0, ep, Local{Size: 10}, 10),
		"rebuild size":    Rebuild(ctx, l, []int{1}, 0, ep, Local{Size: 11, Data: r, Parity: r}, 10),
	}
	for name, err := range cases {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Nothing to do: no loss, or an empty set.
	if err := Rebuild(ctx, l, nil, 0, ep, Local{}, 10); err != nil {
		t.Errorf("Rebuild with nothing lost: %v", err)
	}
	if err := Encode(ctx, l, 0, ep, nil, 0, 0, io.Discard); err != nil {
		t.Errorf("Encode of an empty set: %v", err)
	}
}
