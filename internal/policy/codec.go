package policy

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/fields"
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
	d := fields.NewDecoder(data)
	flags := header(d, reportFormat, reportFlags)
	var v [6]int64
	for i := range v {
		v[i] = d.Varint(reportFields[i])
	}
	if err := d.End(); err != nil {
		return fmt.Errorf("%w: report: %v", ErrCorrupt, err)
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
	dec := fields.NewDecoder(data)
	flags := header(dec, decisionFormat, decisionFlags)
	next := dec.Varint("next decision step")
	interval := dec.Varint("interval")
	if err := dec.End(); err != nil {
		return fmt.Errorf("%w: decision: %v", ErrCorrupt, err)
	}
	*d = Decision{
		Checkpoint:       flags&decisionCheckpoint != 0,
		Halt:             flags&decisionHalt != 0,
		NextDecisionStep: next,
		Interval:         time.Duration(interval),
	}
	return nil
}

// reportFields name a report's varints, in order, for errors.
var reportFields = [6]string{"step", "elapsed", "since checkpoint", "step time", "window", "checkpoint cost"}

// header reads the format and flags bytes; flagLimit is one past the highest
// defined flag bit.
func header(d *fields.Decoder, format, flagLimit byte) byte {
	if f := d.Byte("format"); d.Err() == nil && f != format {
		d.Failf("format", "%d, want %d", f, format)
	}
	flags := d.Byte("flags")
	if d.Err() == nil && flags >= flagLimit {
		d.Failf("flags", "unknown flags %#x", flags)
	}
	return flags
}
