package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/units"
)

// Kind says when a policy checkpoints.
type Kind uint8

const (
	None  Kind = iota // never checkpoint
	Steps             // every Policy.Steps steps
	Time              // every Policy.Period of wall time
	Auto              // Daly's interval (000 eq. 2) from the measured cost and the MTTI
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Steps:
		return "steps"
	case Time:
		return "time"
	case Auto:
		return "auto"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Defaults used where a Policy field is zero.
const (
	DefaultDecisionPeriod = time.Second
	DefaultAssumedCost    = time.Second
)

// Policy is the checkpoint policy of a job. The zero value is None.
type Policy struct {
	Kind   Kind
	Steps  int64         // Steps: checkpoint at every positive multiple of Steps
	Period time.Duration // Time: checkpoint when Period has passed since the last one

	// MTTI is Auto's mean time to interrupt. Zero means unknown: Decide then
	// estimates it from the failures the job has seen (see EstimateMTTI).
	MTTI time.Duration
	// AssumedCost is the checkpoint cost Auto uses until ckpt has measured
	// one; zero means DefaultAssumedCost. The first checkpoint of a launch
	// without a measured cost still comes within one DecisionPeriod.
	AssumedCost time.Duration
	// DecisionPeriod is the wall time Time and Auto aim for between decision
	// rounds; zero means DefaultDecisionPeriod. Steps ignores it.
	DecisionPeriod time.Duration
}

// ErrInvalid is wrapped by every error about a bad policy or a bad
// command-line form.
var ErrInvalid = errors.New("invalid checkpoint policy")

// ParseError reports a command-line form Parse does not accept.
type ParseError struct {
	Input  string // the text as given
	Reason string // what is wrong, phrased to help the user fix it
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid checkpoint interval %q: %s", e.Input, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return ErrInvalid }

const forms = "use Nsteps (e.g. 100steps), a duration (e.g. 30s, 5m, 1h30m), auto, auto:MTTI (e.g. auto:6h) or none"

// Parse reads the --interval forms:
//
//	none          never checkpoint
//	100steps      every 100 steps ("1step" also works)
//	30s, 5m, 1h30m every such wall time (units.ParseDuration syntax; a unit is required)
//	auto          Daly's interval, MTTI estimated from the failures seen
//	auto:6h       Daly's interval with a known MTTI
//
// Case and surrounding space are ignored for the words. A bare number
// ("100") is refused because it could mean steps or seconds. The result
// passes Validate; the other fields keep their defaults (zero).
func Parse(s string) (Policy, error) {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	bad := func(reason string) (Policy, error) {
		return Policy{}, &ParseError{Input: s, Reason: reason}
	}
	switch {
	case t == "":
		return bad("empty; " + forms)
	case lower == "none":
		return Policy{Kind: None}, nil
	case lower == "auto":
		return Policy{Kind: Auto}, nil
	case strings.HasPrefix(lower, "auto:"):
		d, reason := parseDuration(t[len("auto:"):])
		if reason != "" {
			return bad("MTTI " + reason)
		}
		return Policy{Kind: Auto, MTTI: d}, nil
	}
	if num, ok := cutSuffix(lower, "steps", "step"); ok {
		num = strings.TrimSpace(num)
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return bad(fmt.Sprintf("step count %q is not a whole number; %s", num, forms))
		}
		if n <= 0 {
			return bad("the step count must be at least 1")
		}
		return Policy{Kind: Steps, Steps: n}, nil
	}
	if _, err := units.ParseFloat(t); err == nil {
		return bad(fmt.Sprintf("a bare number is ambiguous: write %ssteps or %ss", t, t))
	}
	d, reason := parseDuration(t)
	if reason != "" {
		return bad(reason + "; " + forms)
	}
	return Policy{Kind: Time, Period: d}, nil
}

func cutSuffix(s string, suffixes ...string) (string, bool) {
	for _, suf := range suffixes {
		if before, ok := strings.CutSuffix(s, suf); ok {
			return before, true
		}
	}
	return s, false
}

// parseDuration parses a positive duration that fits a time.Duration and is
// at least 1 ns; it returns a reason on failure.
func parseDuration(s string) (time.Duration, string) {
	sec, err := units.ParseDuration(s)
	if err != nil {
		var se *units.SyntaxError
		if errors.As(err, &se) {
			return 0, se.Reason
		}
		return 0, err.Error()
	}
	ns := math.Round(sec * 1e9)
	switch {
	case sec <= 0:
		return 0, fmt.Sprintf("%q must be positive", strings.TrimSpace(s))
	case ns < 1:
		return 0, fmt.Sprintf("%q is shorter than a nanosecond", strings.TrimSpace(s))
	case ns >= math.MaxInt64:
		return 0, fmt.Sprintf("%q is longer than %v", strings.TrimSpace(s), time.Duration(math.MaxInt64))
	}
	return time.Duration(ns), ""
}

// String returns the command-line form, which Parse reads back into the same
// Kind, Steps, Period and MTTI. Tuning fields (AssumedCost, DecisionPeriod)
// have no command-line form and are not shown.
func (p Policy) String() string {
	switch p.Kind {
	case None:
		return "none"
	case Steps:
		return strconv.FormatInt(p.Steps, 10) + "steps"
	case Time:
		return p.Period.String()
	case Auto:
		if p.MTTI > 0 {
			return "auto:" + p.MTTI.String()
		}
		return "auto"
	}
	return p.Kind.String()
}

// Validate checks the fields the Kind uses and the tuning fields. Errors
// wrap ErrInvalid and name the bad field and value.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch p.Kind {
	case None, Auto:
	case Steps:
		if p.Steps <= 0 {
			return bad("every %d steps: the step count must be at least 1", p.Steps)
		}
	case Time:
		if p.Period <= 0 {
			return bad("every %v: the period must be positive", p.Period)
		}
	default:
		return bad("unknown kind %d", uint8(p.Kind))
	}
	if p.MTTI < 0 {
		return bad("MTTI %v is negative (0 means estimate it)", p.MTTI)
	}
	if p.AssumedCost < 0 {
		return bad("assumed checkpoint cost %v is negative (0 means %v)", p.AssumedCost, DefaultAssumedCost)
	}
	if p.DecisionPeriod < 0 {
		return bad("decision period %v is negative (0 means %v)", p.DecisionPeriod, DefaultDecisionPeriod)
	}
	return nil
}

func (p Policy) decisionPeriod() time.Duration {
	if p.DecisionPeriod > 0 {
		return p.DecisionPeriod
	}
	return DefaultDecisionPeriod
}

func (p Policy) assumedCost() time.Duration {
	if p.AssumedCost > 0 {
		return p.AssumedCost
	}
	return DefaultAssumedCost
}
