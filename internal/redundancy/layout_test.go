package redundancy

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/quick"
)

// checkLayout verifies every structural property of one layout.
func checkLayout(t *testing.T, l Layout) {
	t.Helper()
	n, k, m := l.Members(), l.DataShards(), l.ParityShards()
	if n != k+m || k < 1 || m < 0 {
		t.Fatalf("%v: n=%d k=%d m=%d", l, n, k, m)
	}
	dataRows := make([]int, n)
	parityRows := make([]int, n)
	for r := 0; r < n; r++ {
		seen := make([]bool, n)
		row := l.Row(r)
		if len(row.Data) != k || len(row.Parity) != m {
			t.Fatalf("%v row %d: %d data, %d parity", l, r, len(row.Data), len(row.Parity))
		}
		for s := 0; s < n; s++ {
			i := l.Member(r, s)
			if i < 0 || i >= n {
				t.Fatalf("%v row %d shard %d: member %d out of range", l, r, s, i)
			}
			if seen[i] {
				t.Fatalf("%v row %d: member %d twice", l, r, i)
			}
			seen[i] = true
			if got := l.Shard(r, i); got != s {
				t.Fatalf("%v row %d: Shard(member %d) = %d, want %d", l, r, i, got, s)
			}
			if s < k {
				dataRows[i]++
				if row.Data[s] != i || l.DataMember(r, s) != i || l.DataRow(i, s) != r {
					t.Fatalf("%v row %d chunk %d: member %d, Row %v, DataRow %d", l, r, s, i, row, l.DataRow(i, s))
				}
			} else {
				p := s - k
				parityRows[i]++
				if row.Parity[p] != i || l.ParityHolder(r, p) != i || l.ParityRow(i, p) != r {
					t.Fatalf("%v row %d parity %d: member %d, Row %v, ParityRow %d", l, r, p, i, row, l.ParityRow(i, p))
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		if dataRows[i] != k || parityRows[i] != m {
			t.Fatalf("%v: member %d is data in %d rows (want %d) and parity in %d (want %d)", l, i, dataRows[i], k, parityRows[i], m)
		}
		// Member i's chunks are in k distinct rows, its parity in m others.
		rows := make(map[int]bool)
		for c := 0; c < k; c++ {
			rows[l.DataRow(i, c)] = true
		}
		for p := 0; p < m; p++ {
			rows[l.ParityRow(i, p)] = true
		}
		if len(rows) != n {
			t.Fatalf("%v: member %d covers %d rows", l, i, len(rows))
		}
	}
}

func TestLayoutExhaustive(t *testing.T) {
	maxN := 48
	if testing.Short() {
		maxN = 24
	}
	for n := 1; n <= maxN; n++ {
		for m := 0; m < n; m++ {
			l, err := NewLayout(n, m)
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, l)
		}
	}
	for _, nm := range [][2]int{{256, 1}, {256, 56}, {257, 3}, {1000, 1}} {
		l, err := NewLayout(nm[0], nm[1])
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, l)
	}
}

func TestNewLayoutErrors(t *testing.T) {
	for _, nm := range [][2]int{{0, 0}, {-1, 0}, {1, 1}, {3, 3}, {3, -1}, {MaxMembers + 1, 1}} {
		if l, err := NewLayout(nm[0], nm[1]); err == nil {
			t.Errorf("NewLayout(%d, %d) = %v, want an error", nm[0], nm[1], l)
		}
	}
	if _, err := NewLayout(MaxMembers, 1); err != nil {
		t.Error(err)
	}
}

// PARTNER degenerates to each member holding a copy of the other's data.
func TestPartnerLayout(t *testing.T) {
	l, err := Partner().Layout()
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Row(0); !reflect.DeepEqual(got, Row{Data: []int{0}, Parity: []int{1}}) {
		t.Errorf("row 0 = %+v", got)
	}
	if got := l.Row(1); !reflect.DeepEqual(got, Row{Data: []int{1}, Parity: []int{0}}) {
		t.Errorf("row 1 = %+v", got)
	}
	for _, b := range []int64{0, 1, 4096, 1<<40 + 3} {
		if l.ChunkSize(b) != b || l.ParitySize(b) != b {
			t.Errorf("partner B=%d: chunk %d, parity %d", b, l.ChunkSize(b), l.ParitySize(b))
		}
	}
	// Parity of a row with one data shard is a copy of it.
	c, _ := NewCodec(1, 1)
	d := []byte("partner data")
	p := make([]byte, len(d))
	if err := c.Encode([][]byte{d}, [][]byte{p}); err != nil || string(p) != string(d) {
		t.Errorf("partner parity = %q, %v", p, err)
	}
	// Single: one member, no parity.
	s, _ := Single().Layout()
	if got := s.Row(0); len(got.Data) != 1 || got.Data[0] != 0 || len(got.Parity) != 0 || s.ParitySize(100) != 0 {
		t.Errorf("single row 0 = %+v", got)
	}
}

func TestChunkSize(t *testing.T) {
	cases := []struct {
		n, m      int
		b         int64
		chunk, pz int64
	}{
		{4, 1, 0, 0, 0},
		{4, 1, 1, 1, 1},
		{4, 1, 3, 1, 1},
		{4, 1, 4, 2, 2},
		{10, 2, 64 << 20, 8 << 20, 16 << 20},
		{6, 3, 10, 4, 12},
		{1, 0, 99, 99, 0},
		{3, 1, -5, 0, 0},
	}
	for _, c := range cases {
		l, _ := NewLayout(c.n, c.m)
		if got := l.ChunkSize(c.b); got != c.chunk {
			t.Errorf("%v ChunkSize(%d) = %d, want %d", l, c.b, got, c.chunk)
		}
		if got := l.ParitySize(c.b); got != c.pz {
			t.Errorf("%v ParitySize(%d) = %d, want %d", l, c.b, got, c.pz)
		}
	}
	f := func(n16 uint16, m16 uint16, b uint64) bool {
		n := int(n16)%MaxMembers + 1
		m := int(m16) % n
		l, _ := NewLayout(n, m)
		size := int64(b >> 2)
		k := int64(n - m)
		c := l.ChunkSize(size)
		return c*k >= size && (c-1)*k < size && l.ParitySize(size) == int64(m)*c
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}

// naiveRow is the layout as the issue states it: in row r the data members
// are (r+j) mod n for j < k, each contributing chunk (member−r) mod n, and
// the parity holders (r+k+p) mod n.
func naiveRow(n, m, r int) (data, chunks, parity []int) {
	k := n - m
	for j := 0; j < k; j++ {
		mem := (r + j) % n
		data = append(data, mem)
		chunks = append(chunks, ((mem-r)%n+n)%n)
	}
	for p := 0; p < m; p++ {
		parity = append(parity, (r+k+p)%n)
	}
	return
}

func TestLayoutQuick(t *testing.T) {
	f := func(n16, m16, r16 uint16) bool {
		n := int(n16)%300 + 1
		m := int(m16) % n
		r := int(r16) % n
		l, err := NewLayout(n, m)
		if err != nil {
			return false
		}
		data, chunks, parity := naiveRow(n, m, r)
		row := l.Row(r)
		for j, mem := range data {
			if row.Data[chunks[j]] != mem || l.Shard(r, mem) != chunks[j] || l.DataRow(mem, chunks[j]) != r {
				return false
			}
		}
		for p, mem := range parity {
			if row.Parity[p] != mem || l.ParityRow(mem, p) != r {
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
	// Large sets, sampled.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := rng.IntN(MaxMembers) + 1
		m := rng.IntN(n)
		r := rng.IntN(n)
		l, _ := NewLayout(n, m)
		data, _, parity := naiveRow(n, m, r)
		if got := l.Row(r); !reflect.DeepEqual(got.Data, data) || !reflect.DeepEqual(got.Parity, parity) && m > 0 {
			t.Fatalf("%v row %d = %v, want %v %v", l, r, got, data, parity)
		}
	}
}

func TestDiagram(t *testing.T) {
	l, _ := NewLayout(4, 1)
	want := "" +
		"row   m0   m1   m2   m3\n" +
		"  0   D0   D1   D2   P0\n" +
		"  1   P0   D0   D1   D2\n" +
		"  2   D2   P0   D0   D1\n" +
		"  3   D1   D2   P0   D0\n"
	if got := l.Diagram(); got != want {
		t.Errorf("Diagram:\n%s\nwant:\n%s", got, want)
	}
}
