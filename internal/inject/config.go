package inject

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/units"
)

// Family is the distribution family of the times between failures.
type Family uint8

const (
	Exponential Family = iota // memoryless; standard deviation = mean (003's "100 % of deviation")
	Weibull                   // shape k: k < 1 clusters failures (infant mortality), k > 1 spaces them out (wear-out)
)

// Dist is the distribution of the times between failures. Its mean is always
// the configured MTTI; Shape is the Weibull shape k and is ignored for the
// exponential. The zero value is the exponential.
type Dist struct {
	Family Family
	Shape  float64
}

// Kind says what one failure kills.
type Kind uint8

const (
	Rank Kind = iota // one rank's process
	Node             // every rank of one node, and the node's cache
	// Hang stops one rank's process (SIGSTOP) without killing it: it
	// neither exits nor heartbeats, and only the coordinator's failure
	// detection can tell.
	Hang
)

func (k Kind) String() string {
	switch k {
	case Rank:
		return "rank"
	case Node:
		return "node"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Config is the injector's configuration.
type Config struct {
	MTTI time.Duration // mean time between injected failures, in job time; > 0
	Dist Dist
	Kind Kind
	Seed uint64 // the same seed gives the same schedule
}

// ErrInvalid is wrapped by every configuration and flag error.
var ErrInvalid = errors.New("invalid failure injection")

// FlagError reports a bad value of one of the injector's flags.
type FlagError struct {
	Flag   string // the flag's name without dashes, e.g. "inject-dist"
	Input  string // the value as given
	Reason string // what is wrong, phrased to help the user fix it
}

func (e *FlagError) Error() string {
	return fmt.Sprintf("invalid --%s %q: %s", e.Flag, e.Input, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FlagError) Unwrap() error { return ErrInvalid }

// ParseDist reads the --inject-dist forms "exp" (or "exponential") and
// "weibull:SHAPE" with SHAPE a plain decimal number > 0 ("weibull:0.7").
// Case and surrounding space are ignored.
func ParseDist(s string) (Dist, error) {
	bad := func(reason string) (Dist, error) {
		return Dist{}, &FlagError{Flag: "inject-dist", Input: s, Reason: reason}
	}
	t := strings.ToLower(strings.TrimSpace(s))
	switch {
	case t == "exp" || t == "exponential":
		return Dist{Family: Exponential}, nil
	case t == "weibull":
		return bad("give the shape, e.g. weibull:0.7")
	case strings.HasPrefix(t, "weibull:"):
		num := strings.TrimSpace(t[len("weibull:"):])
		k, err := units.ParseFloat(num)
		if err != nil {
			return bad(fmt.Sprintf("the shape %q is not a number", num))
		}
		d := Dist{Family: Weibull, Shape: k}
		if reason := d.check(); reason != "" {
			return bad(reason)
		}
		return d, nil
	}
	return bad("use exp or weibull:SHAPE (e.g. weibull:0.7)")
}

// String returns the --inject-dist form, which ParseDist reads back.
func (d Dist) String() string {
	switch d.Family {
	case Exponential:
		return "exp"
	case Weibull:
		return "weibull:" + strconv.FormatFloat(d.Shape, 'g', -1, 64)
	}
	return fmt.Sprintf("Family(%d)", uint8(d.Family))
}

// Validate checks the family and, for the Weibull, the shape.
func (d Dist) Validate() error {
	if reason := d.check(); reason != "" {
		return fmt.Errorf("%w: distribution %v: %s", ErrInvalid, d, reason)
	}
	return nil
}

func (d Dist) check() string {
	switch d.Family {
	case Exponential:
		return ""
	case Weibull:
		k := d.Shape
		if math.IsNaN(k) || math.IsInf(k, 0) || k <= 0 {
			return fmt.Sprintf("the Weibull shape must be a finite number > 0, not %g", k)
		}
		if g := math.Gamma(1 + 2/k); math.IsInf(g, 0) {
			return fmt.Sprintf("the Weibull shape %g is too small (below about 0.012 its moments overflow)", k)
		}
		return ""
	}
	return fmt.Sprintf("unknown family %d", uint8(d.Family))
}

// Scale is the distribution's scale for a given mean, in the unit of the
// mean: the mean itself for the exponential, and for the Weibull
//
//	λ = mean / Γ(1 + 1/k),
//
// since a Weibull of shape k and scale λ has mean λ·Γ(1 + 1/k).
func (d Dist) Scale(mean float64) float64 {
	if d.Family == Weibull {
		return mean / math.Gamma(1+1/d.Shape)
	}
	return mean
}

// CV is the coefficient of variation (standard deviation over mean) of the
// times between failures: 1 for the exponential and
//
//	√(Γ(1 + 2/k) / Γ(1 + 1/k)² − 1)
//
// for the Weibull (about 1.46 for k = 0.7, 0.68 for k = 1.5, 1 for k = 1).
func (d Dist) CV() float64 {
	if d.Family != Weibull {
		return 1
	}
	g1, g2 := math.Gamma(1+1/d.Shape), math.Gamma(1+2/d.Shape)
	return math.Sqrt(max(g2/(g1*g1)-1, 0))
}

// ParseKind reads the --inject-kind forms "rank", "node" and "hang".
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "rank":
		return Rank, nil
	case "node":
		return Node, nil
	case "hang":
		return Hang, nil
	}
	return 0, &FlagError{Flag: "inject-kind", Input: s, Reason: "use rank, node or hang"}
}

// ParseMTTI reads --inject-mtti: a duration in units.ParseDuration syntax
// ("90s", "5m", "1h30m"; a bare number is seconds), > 0 and at least 1 ms.
func ParseMTTI(s string) (time.Duration, error) {
	bad := func(reason string) (time.Duration, error) {
		return 0, &FlagError{Flag: "inject-mtti", Input: s, Reason: reason}
	}
	sec, err := units.ParseDuration(s)
	if err != nil {
		var se *units.SyntaxError
		if errors.As(err, &se) {
			return bad(se.Reason)
		}
		return bad(err.Error())
	}
	switch {
	case sec <= 0:
		return bad("the MTTI must be positive")
	case sec < 1e-3:
		return bad("the MTTI must be at least 1ms")
	case sec*1e9 >= math.MaxInt64:
		return bad(fmt.Sprintf("the MTTI must be at most %v", time.Duration(math.MaxInt64)))
	}
	return time.Duration(math.Round(sec * 1e9)), nil
}

// ParseFlags builds a Config from the flag values --inject-mtti,
// --inject-dist, --inject-kind and --seed. The first bad value's error is
// returned.
func ParseFlags(mtti, dist, kind string, seed uint64) (Config, error) {
	m, err := ParseMTTI(mtti)
	if err != nil {
		return Config{}, err
	}
	d, err := ParseDist(dist)
	if err != nil {
		return Config{}, err
	}
	k, err := ParseKind(kind)
	if err != nil {
		return Config{}, err
	}
	return Config{MTTI: m, Dist: d, Kind: k, Seed: seed}, nil
}

// Validate checks every field; errors wrap ErrInvalid and name the value.
func (c Config) Validate() error {
	if c.MTTI <= 0 {
		return fmt.Errorf("%w: MTTI %v must be positive", ErrInvalid, c.MTTI)
	}
	if err := c.Dist.Validate(); err != nil {
		return err
	}
	if c.Kind > Hang {
		return fmt.Errorf("%w: unknown kind %d", ErrInvalid, uint8(c.Kind))
	}
	return nil
}
