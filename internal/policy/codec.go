package policy

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("policy: corrupt encoding")

// Encoded forms. Both start with a format byte and a flags byte, followed by
// zigzag varints (encoding/binary's AppendVarint) in the order listed. Every
// value round-trips, the shortest varint form is required, unknown flag bits
// and trailing bytes are errors, so one value has exactly one encoding.
//
//	Report:   1, flags(bit0 Halt), Step, Elapsed, SinceCheckpoint, StepTime, Window, CheckpointCost
//	Decision: 1, flags(bit0 Checkpoint, bit1 Halt), NextDecisionStep, Interval
//
// MaxReportSize and MaxDecisionSize bound the lengths.
const (
	reportFormat   = 1
	decisionFormat = 1

	MaxReportSize   = 2 + 6*binary.MaxVarintLen64
	MaxDecisionSize = 2 + 2*binary.MaxVarintLen64
)

const (
	reportHalt = 1 << iota
	reportFlags
)

const (
	decisionCheckpoint = 1 << iota
	decisionHalt
	decisionFlags
)

var (
	_ encoding.BinaryMarshaler   = Report{}
	_ encoding.BinaryUnmarshaler = (*Report)(nil)
	_ encoding.BinaryAppender    = Report{}
	_ encoding.BinaryMarshaler   = Decision{}
	_ encoding.BinaryUnmarshaler = (*Decision)(nil)
	_ encoding.BinaryAppender    = Decision{}
)

// AppendBinary appends the encoded report to b. It never fails.
func (r Report) AppendBinary(b []byte) ([]byte, error) {
	var flags byte
	if r.Halt {
		flags |= reportHalt
	}
	b = append(b, reportFormat, flags)
	for _, v := range []int64{r.Step, int64(r.Elapsed), int64(r.SinceCheckpoint), int64(r.StepTime), r.Window, int64(r.CheckpointCost)} {
		b = binary.AppendVarint(b, v)
	}
	return b, nil
}

// MarshalBinary returns the encoded report. It never fails.
func (r Report) MarshalBinary() ([]byte, error) {
	return r.AppendBinary(make([]byte, 0, MaxReportSize))
}

// UnmarshalBinary decodes a report written by MarshalBinary. It never
// panics; on error r is left unchanged and the error wraps ErrCorrupt. It
// does not check the values' ranges (see Report.Validate).
func (r *Report) UnmarshalBinary(data []byte) error {
	d := decoder{b: data, what: "report"}
	flags := d.header(reportFormat, reportFlags)
	var v [6]int64
	for i := range v {
		v[i] = d.varint()
	}
	if err := d.finish(); err != nil {
		return err
	}
	*r = Report{
		Step:            v[0],
		Elapsed:         time.Duration(v[1]),
		SinceCheckpoint: time.Duration(v[2]),
		StepTime:        time.Duration(v[3]),
		Window:          v[4],
		CheckpointCost:  time.Duration(v[5]),
		Halt:            flags&reportHalt != 0,
	}
	return nil
}

// AppendBinary appends the encoded decision to b. It never fails.
func (d Decision) AppendBinary(b []byte) ([]byte, error) {
	var flags byte
	if d.Checkpoint {
		flags |= decisionCheckpoint
	}
	if d.Halt {
		flags |= decisionHalt
	}
	b = append(b, decisionFormat, flags)
	b = binary.AppendVarint(b, d.NextDecisionStep)
	b = binary.AppendVarint(b, int64(d.Interval))
	return b, nil
}

// MarshalBinary returns the encoded decision. It never fails.
func (d Decision) MarshalBinary() ([]byte, error) {
	return d.AppendBinary(make([]byte, 0, MaxDecisionSize))
}

// UnmarshalBinary decodes a decision written by MarshalBinary. It never
// panics; on error d is left unchanged and the error wraps ErrCorrupt.
func (d *Decision) UnmarshalBinary(data []byte) error {
	dec := decoder{b: data, what: "decision"}
	flags := dec.header(decisionFormat, decisionFlags)
	next := dec.varint()
	interval := dec.varint()
	if err := dec.finish(); err != nil {
		return err
	}
	*d = Decision{
		Checkpoint:       flags&decisionCheckpoint != 0,
		Halt:             flags&decisionHalt != 0,
		NextDecisionStep: next,
		Interval:         time.Duration(interval),
	}
	return nil
}

// decoder reads a message and remembers the first error.
type decoder struct {
	b    []byte
	off  int
	what string
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: "+format, append([]any{ErrCorrupt, d.what}, args...)...)
	}
}

// header reads the format and flags bytes; flagLimit is one past the highest
// defined flag bit.
func (d *decoder) header(format, flagLimit byte) byte {
	if len(d.b) < 2 {
		d.fail("%d bytes, want at least 2", len(d.b))
		return 0
	}
	if d.b[0] != format {
		d.fail("format %d, want %d", d.b[0], format)
		return 0
	}
	flags := d.b[1]
	if flags >= flagLimit {
		d.fail("unknown flags %#x", flags)
		return 0
	}
	d.off = 2
	return flags
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail("truncated at byte %d", d.off)
		return 0
	case n < 0:
		d.fail("varint overflows 64 bits at byte %d", d.off)
		return 0
	case n != varintLen(v):
		d.fail("non-minimal varint at byte %d", d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) finish() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d trailing bytes", len(d.b)-d.off)
	}
	return d.err
}

func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}
