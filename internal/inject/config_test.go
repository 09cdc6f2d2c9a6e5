package inject

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		mtti, dist, kind string
		want             Config
	}{
		{"30s", "exp", "rank", Config{MTTI: 30 * time.Second, Seed: 7}},
		{"5m", "Exponential", " node ", Config{MTTI: 5 * time.Minute, Kind: Node, Seed: 7}},
		{"1h30m", "weibull:0.7", "rank", Config{MTTI: 90 * time.Minute, Dist: Dist{Family: Weibull, Shape: 0.7}, Seed: 7}},
		{"90", "weibull:1.5", "node", Config{MTTI: 90 * time.Second, Dist: Dist{Family: Weibull, Shape: 1.5}, Kind: Node, Seed: 7}},
		{"250ms", "WEIBULL: 2", "rank", Config{MTTI: 250 * time.Millisecond, Dist: Dist{Family: Weibull, Shape: 2}, Seed: 7}},
		{"2s", "exp", "hang", Config{MTTI: 2 * time.Second, Kind: Hang, Seed: 7}},
	} {
		got, err := ParseFlags(c.mtti, c.dist, c.kind, 7)
		if err != nil || got != c.want {
			t.Errorf("ParseFlags(%q, %q, %q) = %+v, %v; want %+v", c.mtti, c.dist, c.kind, got, err, c.want)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%+v: %v", got, err)
		}
		if d, err := ParseDist(got.Dist.String()); err != nil || d != got.Dist {
			t.Errorf("%v does not read back: %+v, %v", got.Dist, d, err)
		}
		if k, err := ParseKind(got.Kind.String()); err != nil || k != got.Kind {
			t.Errorf("%v does not read back: %v, %v", got.Kind, k, err)
		}
	}
}

func TestParseFlagErrors(t *testing.T) {
	for _, c := range []struct {
		mtti, dist, kind string
		flag, input      string
		want             string
	}{
		{"0s", "exp", "rank", "inject-mtti", "0s", "must be positive"},
		{"-5m", "exp", "rank", "inject-mtti", "-5m", "must be positive"},
		{"", "exp", "rank", "inject-mtti", "", ""},
		{"5x", "exp", "rank", "inject-mtti", "5x", "unknown unit"},
		{"0.1ms", "exp", "rank", "inject-mtti", "0.1ms", "at least 1ms"},
		{"1000y", "exp", "rank", "inject-mtti", "1000y", "at most"},
		{"1m", "", "rank", "inject-dist", "", "use exp or weibull:SHAPE"},
		{"1m", "gauss", "rank", "inject-dist", "gauss", "use exp or weibull:SHAPE"},
		{"1m", "weibull", "rank", "inject-dist", "weibull", "give the shape"},
		{"1m", "weibull:", "rank", "inject-dist", "weibull:", "not a number"},
		{"1m", "weibull:x", "rank", "inject-dist", "weibull:x", `shape "x" is not a number`},
		{"1m", "weibull:0", "rank", "inject-dist", "weibull:0", "> 0, not 0"},
		{"1m", "weibull:-0.7", "rank", "inject-dist", "weibull:-0.7", "> 0, not -0.7"},
		{"1m", "weibull:NaN", "rank", "inject-dist", "weibull:NaN", "not a number"},
		{"1m", "weibull:0.001", "rank", "inject-dist", "weibull:0.001", "too small"},
		{"1m", "exp", "host", "inject-kind", "host", "use rank, node or hang"},
		{"1m", "exp", "", "inject-kind", "", "use rank, node or hang"},
	} {
		_, err := ParseFlags(c.mtti, c.dist, c.kind, 1)
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Flag != c.flag || fe.Input != c.input || !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseFlags(%q, %q, %q) = %v, want a *FlagError for --%s %q", c.mtti, c.dist, c.kind, err, c.flag, c.input)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("--%s %q", c.flag, c.input)) || !strings.Contains(msg, c.want) {
			t.Errorf("error %q, want it to name --%s %q and say %q", msg, c.flag, c.input, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Config{MTTI: time.Minute}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "MTTI 0s must be positive"},
		{Config{MTTI: -time.Second}, "MTTI -1s"},
		{Config{MTTI: time.Minute, Dist: Dist{Family: Weibull}}, "shape must be a finite number > 0, not 0"},
		{Config{MTTI: time.Minute, Dist: Dist{Family: Weibull, Shape: math.Inf(1)}}, "not +Inf"},
		{Config{MTTI: time.Minute, Dist: Dist{Family: 5}}, "unknown family 5"},
		{Config{MTTI: time.Minute, Kind: 3}, "unknown kind 3"},
	} {
		err := c.cfg.Validate()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want an ErrInvalid saying %q", c.cfg, err, c.want)
		}
		if _, err := NewSchedule(c.cfg); err == nil {
			t.Errorf("%+v: NewSchedule accepted it", c.cfg)
		}
	}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
}
