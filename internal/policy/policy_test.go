package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Policy
	}{
		{"none", Policy{Kind: None}},
		{" NONE ", Policy{Kind: None}},
		{"auto", Policy{Kind: Auto}},
		{"Auto", Policy{Kind: Auto}},
		{"auto:6h", Policy{Kind: Auto, MTTI: 6 * time.Hour}},
		{"auto:1h30m", Policy{Kind: Auto, MTTI: 90 * time.Minute}},
		{"100steps", Policy{Kind: Steps, Steps: 100}},
		{"1step", Policy{Kind: Steps, Steps: 1}},
		{"100 steps", Policy{Kind: Steps, Steps: 100}},
		{"30s", Policy{Kind: Time, Period: 30 * time.Second}},
		{"5m", Policy{Kind: Time, Period: 5 * time.Minute}},
		{"1h30m", Policy{Kind: Time, Period: 90 * time.Minute}},
		{"250ms", Policy{Kind: Time, Period: 250 * time.Millisecond}},
		{"1.5d", Policy{Kind: Time, Period: 36 * time.Hour}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Parse(%q) result does not validate: %v", c.in, err)
		}
		back, err := Parse(got.String())
		if err != nil || back != got {
			t.Errorf("Parse(%q).String() = %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		in, want string // want: a fragment of the message
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"100", "write 100steps or 100s"},
		{"1.5", "ambiguous"},
		{"0steps", "at least 1"},
		{"-3steps", "at least 1"},
		{"1.5steps", `"1.5" is not a whole number`},
		{"xsteps", `"x" is not a whole number`},
		{"steps", `"" is not a whole number`},
		{"99999999999999999999steps", "not a whole number"},
		{"0s", "must be positive"},
		{"-5m", "must be positive"},
		{"5x", `unknown unit`},
		{"soon", "use Nsteps"},
		{"auto:", "MTTI"},
		{"auto:0s", "MTTI"},
		{"auto:fast", "MTTI"},
		{"1000y", "longer than"},
		{"0.1ns", "shorter than a nanosecond"},
	} {
		_, err := Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q): no error", c.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, fmt.Sprintf("%q", c.in)) {
			t.Errorf("Parse(%q) error %q, want it to quote the input and say %q", c.in, msg, c.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) error does not wrap ErrInvalid", c.in)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Input != c.in {
			t.Errorf("Parse(%q) error is not a *ParseError for the input: %#v", c.in, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Kind: Steps}, "every 0 steps"},
		{Policy{Kind: Steps, Steps: -2}, "every -2 steps"},
		{Policy{Kind: Time}, "every 0s"},
		{Policy{Kind: Time, Period: -time.Second}, "every -1s"},
		{Policy{Kind: 9}, "unknown kind 9"},
		{Policy{Kind: Auto, MTTI: -time.Hour}, "MTTI -1h0m0s"},
		{Policy{Kind: Auto, AssumedCost: -1}, "assumed checkpoint cost -1ns"},
		{Policy{Kind: Time, Period: time.Second, DecisionPeriod: -1}, "decision period -1ns"},
	} {
		err := c.p.Validate()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want an ErrInvalid naming %q", c.p, err, c.want)
		}
	}
	for _, p := range []Policy{{}, {Kind: Auto}, {Kind: Steps, Steps: 1}, {Kind: Time, Period: 1}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
