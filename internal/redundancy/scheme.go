package redundancy

import (
	"fmt"
	"strconv"
	"strings"
)

// Scheme is a redundancy scheme described, as SCR's redundancy descriptors
// do, by its data and parity shards per set: single (1+0), partner (1+1),
// xor:S (S−1 data + 1 parity) and rs:K+M. Kind is only a name: the layout
// and the codec depend on Data and Parity alone (see NewCodec).
//
// The spelling and limits are those of `ckpt run --redundancy` and of
// internal/plan's ParseScheme.
type Scheme struct {
	Kind   string // single, partner, xor, rs
	Data   int    // k, data shards per row
	Parity int    // m, parity shards per row
}

// Limits of the spellings, as in internal/plan.
const (
	MaxXORSet  = 4096 // largest S of xor:S
	MaxRSShard = 256  // largest K+M of rs:K+M (GF(2^8))
)

// Single is no redundancy: a set of one member and no parity.
func Single() Scheme { return Scheme{Kind: "single", Data: 1} }

// Partner keeps a full copy of each member's data on its partner.
func Partner() Scheme { return Scheme{Kind: "partner", Data: 1, Parity: 1} }

// XOR is RAID-5-like parity over a set of setSize members (2..MaxXORSet).
func XOR(setSize int) (Scheme, error) {
	if setSize < 2 || setSize > MaxXORSet {
		return Scheme{}, fmt.Errorf("invalid redundancy xor:%d: xor:S needs a set size S from 2 to %d", setSize, MaxXORSet)
	}
	return Scheme{Kind: "xor", Data: setSize - 1, Parity: 1}, nil
}

// RS is Reed–Solomon with k data and m parity shards per row (k ≥ 1,
// m ≥ 1, k+m ≤ MaxRSShard).
func RS(k, m int) (Scheme, error) {
	if k < 1 || m < 1 || k+m > MaxRSShard {
		return Scheme{}, fmt.Errorf("invalid redundancy rs:%d+%d: rs:K+M needs K ≥ 1 data and M ≥ 1 parity shards, K+M ≤ %d", k, m, MaxRSShard)
	}
	return Scheme{Kind: "rs", Data: k, Parity: m}, nil
}

// ParseScheme reads single, partner, xor:S (2 ≤ S ≤ 4096) or rs:K+M
// (K ≥ 1, M ≥ 1, K+M ≤ 256), case-insensitively, as internal/plan does.
func ParseScheme(text string) (Scheme, error) {
	t := strings.TrimSpace(strings.ToLower(text))
	switch {
	case t == "single":
		return Single(), nil
	case t == "partner":
		return Partner(), nil
	case strings.HasPrefix(t, "xor:"):
		n, err := strconv.Atoi(t[4:])
		if err != nil || n < 2 || n > MaxXORSet {
			return Scheme{}, fmt.Errorf("invalid redundancy %q: xor:S needs a set size S from 2 to %d", text, MaxXORSet)
		}
		return XOR(n)
	case strings.HasPrefix(t, "rs:"):
		k, m, ok := strings.Cut(t[3:], "+")
		kn, err1 := strconv.Atoi(k)
		mn, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || kn < 1 || mn < 1 || kn+mn > MaxRSShard {
			return Scheme{}, fmt.Errorf("invalid redundancy %q: rs:K+M needs K ≥ 1 data and M ≥ 1 parity shards, K+M ≤ %d", text, MaxRSShard)
		}
		return RS(kn, mn)
	}
	return Scheme{}, fmt.Errorf("invalid redundancy %q: use single, partner, xor:S or rs:K+M", text)
}

// SetSize is n, the number of members (nodes) of one redundancy set.
func (s Scheme) SetSize() int { return s.Data + s.Parity }

// Overhead is stored bytes per checkpoint byte, (data+parity)/data.
func (s Scheme) Overhead() float64 { return float64(s.Data+s.Parity) / float64(s.Data) }

func (s Scheme) String() string {
	switch s.Kind {
	case "xor":
		return fmt.Sprintf("xor:%d", s.SetSize())
	case "rs":
		return fmt.Sprintf("rs:%d+%d", s.Data, s.Parity)
	}
	return s.Kind
}

// Validate reports whether s is one of the schemes ParseScheme accepts.
func (s Scheme) Validate() error {
	got, err := ParseScheme(s.String())
	if err != nil {
		return err
	}
	if got != s {
		return fmt.Errorf("invalid redundancy %+v: %s has %d data and %d parity shards", s, got, got.Data, got.Parity)
	}
	return nil
}

// Layout is the rotated layout of one set of this scheme.
func (s Scheme) Layout() (Layout, error) {
	if err := s.Validate(); err != nil {
		return Layout{}, err
	}
	return NewLayout(s.SetSize(), s.Parity)
}
