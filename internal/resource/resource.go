// Package resource checks up front that this machine has what a job or a
// rank needs — processes, file descriptors, memory — so that an absurd size
// is refused with one clear line instead of forking until the machine
// refuses, or dying of the Go runtime's out-of-memory crash.
//
// The check (Check) is a pure function of what is needed and what is there
// (Have); Probe reads what is there from the operating system, so that tests
// can check any shortage with a made-up Have.
package resource

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/ckpt/ckpt/internal/units"
)

// Limit is how much of one resource is left, and where that figure comes
// from (for messages).
type Limit struct {
	// Avail is what may still be used; negative means unknown, and then
	// nothing is checked: a check must never refuse what might work.
	Avail int64
	// From says where Avail comes from: "RLIMIT_NOFILE 1024 (ulimit -n),
	// 12 open".
	From string
}

// Known reports whether the limit was found.
func (l Limit) Known() bool { return l.Avail >= 0 }

// Unknown is a Limit that checks nothing.
var Unknown = Limit{Avail: -1}

// Have is what this process may still use.
type Have struct {
	// Procs: processes (on Linux, threads) this user may still start.
	Procs Limit
	// FDs: file descriptors this process may still open.
	FDs Limit
	// Memory: bytes of memory available without swapping.
	Memory Limit
}

// Kind names a resource in messages and says how to print amounts of it.
type Kind int

const (
	Procs Kind = iota
	FDs
	Memory
)

func (k Kind) format(v int64) string {
	switch k {
	case Procs:
		return fmt.Sprintf("%d processes", v)
	case FDs:
		return fmt.Sprintf("%d file descriptors", v)
	default:
		return units.FormatSize(float64(v)) + " of memory"
	}
}

// Shortage is the error of a check that failed.
type Shortage struct {
	Kind       Kind
	Need, Have int64
	From       string
}

func (s *Shortage) Error() string {
	return fmt.Sprintf("needs %s, %s available (%s)", s.Kind.format(s.Need), trimKind(s.Kind, s.Kind.format(s.Have)), s.From)
}

// trimKind drops the unit's noun from the second amount of a message:
// "needs 300064 file descriptors, 19990 available".
func trimKind(k Kind, s string) string {
	switch k {
	case Procs:
		return s[:len(s)-len(" processes")]
	case FDs:
		return s[:len(s)-len(" file descriptors")]
	}
	return s[:len(s)-len(" of memory")]
}

// Check returns a *Shortage if need exceeds what l says is left, else nil
// (also when l is unknown).
func Check(k Kind, need int64, l Limit) error {
	if !l.Known() || need <= l.Avail {
		return nil
	}
	return &Shortage{Kind: k, Need: need, Have: l.Avail, From: l.From}
}

// Mul returns a·b, or math.MaxInt64 if the product overflows or an
// operand is negative: sizes computed from user input must never wrap
// around to something small that passes a check.
func Mul(a int64, rest ...int64) int64 {
	if a < 0 {
		return math.MaxInt64
	}
	p := uint64(a)
	for _, b := range rest {
		if b < 0 {
			return math.MaxInt64
		}
		hi, lo := bits.Mul64(p, uint64(b))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		p = lo
	}
	return int64(p)
}

// Add returns the sum of its operands, saturating at math.MaxInt64 (and
// treating a negative operand as overflow, as Mul does).
func Add(vs ...int64) int64 {
	var s int64
	for _, v := range vs {
		if v < 0 || s > math.MaxInt64-v {
			return math.MaxInt64
		}
		s += v
	}
	return s
}
