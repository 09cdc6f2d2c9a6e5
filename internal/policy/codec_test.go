package policy

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func sampleReports() []Report {
	return []Report{
		{},
		{Step: 1, Elapsed: time.Millisecond, SinceCheckpoint: time.Millisecond, StepTime: time.Millisecond, Window: 1},
		{Step: 123456, Elapsed: time.Hour, SinceCheckpoint: 30 * time.Second, StepTime: 1234567, Window: 999, CheckpointCost: 2 * time.Second, Halt: true},
		{Step: math.MaxInt64, Elapsed: math.MaxInt64, SinceCheckpoint: math.MaxInt64, StepTime: math.MaxInt64, Window: math.MaxInt64, CheckpointCost: math.MaxInt64},
		{Step: math.MinInt64, Elapsed: -1, Window: -5},
	}
}

func sampleDecisions() []Decision {
	return []Decision{
		{},
		{Checkpoint: true, NextDecisionStep: 200, Interval: time.Minute},
		{Checkpoint: true, Halt: true, NextDecisionStep: Never, Interval: math.MaxInt64},
		{Halt: true, NextDecisionStep: -7, Interval: -1},
	}
}

func TestReportRoundTrip(t *testing.T) {
	for _, r := range sampleReports() {
		b, err := r.MarshalBinary()
		if err != nil || len(b) > MaxReportSize {
			t.Fatalf("%+v: %d bytes, %v", r, len(b), err)
		}
		var got Report
		if err := got.UnmarshalBinary(b); err != nil || got != r {
			t.Fatalf("%+v: decoded %+v, %v", r, got, err)
		}
		// AppendBinary appends.
		b2, _ := r.AppendBinary([]byte("x"))
		if !bytes.Equal(b2[1:], b) {
			t.Fatalf("AppendBinary differs from MarshalBinary")
		}
	}
	// A typical report is small.
	b, _ := Report{Step: 1_000_000, Elapsed: time.Hour, SinceCheckpoint: time.Minute, StepTime: time.Millisecond, Window: 2000, CheckpointCost: time.Second}.MarshalBinary()
	if len(b) > 32 {
		t.Errorf("typical report is %d bytes", len(b))
	}
}

func TestDecisionRoundTrip(t *testing.T) {
	for _, d := range sampleDecisions() {
		b, err := d.MarshalBinary()
		if err != nil || len(b) > MaxDecisionSize {
			t.Fatalf("%+v: %d bytes, %v", d, len(b), err)
		}
		var got Decision
		if err := got.UnmarshalBinary(b); err != nil || got != d {
			t.Fatalf("%+v: decoded %+v, %v", d, got, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good, _ := sampleReports()[2].MarshalBinary()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "format: truncated"},
		{"format", append([]byte{2}, good[1:]...), "format: 2, want 1"},
		{"flags", append([]byte{1, 2}, good[2:]...), "unknown flags 0x2"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"trailing", append(append([]byte(nil), good...), 0), "1 trailing bytes"},
		{"overlong", []byte{1, 0, 0x80, 0x00, 0, 0, 0, 0, 0}, "non-minimal"},
		{"overflow", append([]byte{1, 0}, bytes.Repeat([]byte{0xff}, 11)...), "overflows"},
	} {
		r := Report{Step: 42}
		err := r.UnmarshalBinary(c.data)
		if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "report") {
			t.Errorf("%s: %v, want an ErrCorrupt saying %q", c.name, err, c.want)
		}
		if r != (Report{Step: 42}) {
			t.Errorf("%s: failed decode changed the report: %+v", c.name, r)
		}
	}
	d := Decision{NextDecisionStep: 9}
	if err := d.UnmarshalBinary([]byte{1, 4, 2, 2}); err == nil || !errors.Is(err, ErrCorrupt) || d.NextDecisionStep != 9 {
		t.Errorf("decision with unknown flags: %v, %+v", err, d)
	}
	if err := d.UnmarshalBinary(good); err == nil {
		t.Errorf("a report decoded as a decision")
	}
}

// FuzzReport: decoding never panics; whatever decodes re-encodes to the
// same bytes (one encoding per value).
func FuzzReport(f *testing.F) {
	for _, r := range sampleReports() {
		b, _ := r.MarshalBinary()
		f.Add(b)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, rng.IntN(MaxReportSize+4))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Report
		if err := r.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		b, _ := r.MarshalBinary()
		if !bytes.Equal(b, data) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", data, r, b)
		}
		_ = r.Validate()
		_ = CheckReports([]Report{r})
	})
}

// FuzzDecision is FuzzReport for decisions.
func FuzzDecision(f *testing.F) {
	for _, d := range sampleDecisions() {
		b, _ := d.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 3, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decision
		if err := d.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		b, _ := d.MarshalBinary()
		if !bytes.Equal(b, data) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", data, d, b)
		}
	})
}

// FuzzDecide: Decide on any decodable, valid reports never panics and
// always moves the next decision step forward.
func FuzzDecide(f *testing.F) {
	b, _ := sampleReports()[2].MarshalBinary()
	f.Add(b, uint8(3), int64(30e9))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, param int64) {
		var r Report
		if r.UnmarshalBinary(data) != nil || r.Validate() != nil {
			return
		}
		p := Policy{Kind: Kind(kind % 4), Steps: param, Period: time.Duration(param), MTTI: time.Duration(param)}
		if p.Validate() != nil {
			return
		}
		d, _ := Decide(p, State{Cost: time.Duration(param)}, []Report{r})
		if d.NextDecisionStep <= r.Step && r.Step != Never {
			t.Fatalf("%+v %+v: next decision %d", p, r, d.NextDecisionStep)
		}
	})
}
