package redundancy

import (
	"fmt"
	"strings"
)

// MaxMembers is the largest set Layout accepts (the largest xor:S).
const MaxMembers = MaxXORSet

// Layout is the rotated placement of data chunks and parity shards in a set
// of n members with m parity shards per row and k = n − m data shards (see
// the package documentation). It is a pure value: every method is a small
// computation, and all members of a set compute the same answers.
//
// Rows and members are numbered 0..n−1. In row r the member holding shard s
// (0 ≤ s < n) is (r+s) mod n: shards s < k are data, the member's chunk s;
// shards s ≥ k are parity shard s−k of the row.
type Layout struct {
	n, m int
}

// NewLayout returns the layout of a set of n members (1 ≤ n ≤ MaxMembers)
// with m parity shards per row (0 ≤ m < n).
func NewLayout(n, m int) (Layout, error) {
	if n < 1 || n > MaxMembers {
		return Layout{}, fmt.Errorf("redundancy: a set needs 1 to %d members, got %d", MaxMembers, n)
	}
	if m < 0 || m >= n {
		return Layout{}, fmt.Errorf("redundancy: a set of %d members can have 0 to %d parity shards per row, got %d", n, n-1, m)
	}
	return Layout{n: n, m: m}, nil
}

// Members is n, the number of members and of rows.
func (l Layout) Members() int { return l.n }

// DataShards is k, the data chunks per row and per member.
func (l Layout) DataShards() int { return l.n - l.m }

// ParityShards is m, the parity shards per row and per member, and the
// number of members that may be lost.
func (l Layout) ParityShards() int { return l.m }

func (l Layout) String() string {
	return fmt.Sprintf("%d members, %d data + %d parity per row", l.n, l.n-l.m, l.m)
}

func (l Layout) mod(x int) int {
	x %= l.n
	if x < 0 {
		x += l.n
	}
	return x
}

// Shard is the shard that member holds in row: a data chunk if it is less
// than DataShards (the member's chunk of that number), else parity shard
// Shard−DataShards of the row. Every member holds exactly one shard in every
// row.
func (l Layout) Shard(row, member int) int { return l.mod(member - row) }

// Member is the member that holds shard in row; the inverse of Shard.
func (l Layout) Member(row, shard int) int { return l.mod(row + shard) }

// DataMember is the member that contributes its chunk number chunk to row
// (0 ≤ chunk < DataShards).
func (l Layout) DataMember(row, chunk int) int { return l.Member(row, chunk) }

// ParityHolder is the member that holds parity shard p of row
// (0 ≤ p < ParityShards).
func (l Layout) ParityHolder(row, p int) int { return l.Member(row, l.n-l.m+p) }

// DataRow is the row in which member's chunk number chunk lies.
func (l Layout) DataRow(member, chunk int) int { return l.mod(member - chunk) }

// ParityRow is the row whose parity shard p member holds; it is stored at
// offset p·ChunkSize of the member's parity file.
func (l Layout) ParityRow(member, p int) int { return l.mod(member - (l.n - l.m) - p) }

// Row lists the members of one row by role.
type Row struct {
	Data   []int // Data[c] contributes its chunk number c
	Parity []int // Parity[p] holds parity shard p
}

// Row returns the roles in row r (it allocates; the streaming code uses the
// arithmetic methods instead).
func (l Layout) Row(r int) Row {
	k := l.n - l.m
	row := Row{Data: make([]int, k), Parity: make([]int, l.m)}
	for c := range row.Data {
		row.Data[c] = l.DataMember(r, c)
	}
	for p := range row.Parity {
		row.Parity[p] = l.ParityHolder(r, p)
	}
	return row
}

// ChunkSize is C = ceil(maxSize/k), the size of every chunk and parity
// shard when the largest member of the set holds maxSize bytes (0 for
// maxSize ≤ 0). Member i's chunk c covers bytes [c·C, (c+1)·C) of its data,
// virtually zero-padded beyond its size.
func (l Layout) ChunkSize(maxSize int64) int64 {
	if maxSize <= 0 {
		return 0
	}
	k := int64(l.n - l.m)
	return (maxSize-1)/k + 1
}

// ParitySize is m·C, the size of every member's parity file.
func (l Layout) ParitySize(maxSize int64) int64 { return int64(l.m) * l.ChunkSize(maxSize) }

// Diagram draws the layout as a table of rows by members: "D2" is the
// member's chunk 2, "P1" parity shard 1 of the row.
func (l Layout) Diagram() string {
	var b strings.Builder
	k := l.n - l.m
	b.WriteString("row")
	for i := 0; i < l.n; i++ {
		fmt.Fprintf(&b, " %4s", fmt.Sprintf("m%d", i))
	}
	b.WriteByte('\n')
	for r := 0; r < l.n; r++ {
		fmt.Fprintf(&b, "%3d", r)
		for i := 0; i < l.n; i++ {
			s := l.Shard(r, i)
			if s < k {
				fmt.Fprintf(&b, " %4s", fmt.Sprintf("D%d", s))
			} else {
				fmt.Fprintf(&b, " %4s", fmt.Sprintf("P%d", s-k))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
