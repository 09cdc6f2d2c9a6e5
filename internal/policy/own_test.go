package policy

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/model"
)

func TestOwnSteps(t *testing.T) {
	o := NewOwn(Policy{Kind: Steps, Steps: 5}, 0, 0, 0)
	var got []int64
	for step := int64(0); step <= 20; step++ {
		if o.Need(step, 0) {
			got = append(got, step)
			o.Checkpointed(step, 0, 0)
		}
	}
	if want := []int64{5, 10, 15, 20}; !slices.Equal(got, want) {
		t.Errorf("checkpoints at %v, want %v", got, want)
	}
	// A rank restarted from its checkpoint of step 10 does not take it
	// again, and goes on from there.
	o = NewOwn(Policy{Kind: Steps, Steps: 5}, 10, 0, 1)
	if o.Need(10, 0) || !o.Need(15, 0) {
		t.Error("a rank restarted at step 10 checkpoints at 10 again, or not at 15")
	}
}

func TestOwnTime(t *testing.T) {
	o := NewOwn(Policy{Kind: Time, Period: 10 * time.Second}, 0, time.Second, 0)
	if o.Need(1, 10*time.Second) || !o.Need(2, 11*time.Second) {
		t.Fatal("the period counts from the rank's start")
	}
	o.Checkpointed(2, 11*time.Second, 12*time.Second)
	if o.Need(3, 21*time.Second) || !o.Need(4, 22*time.Second) {
		t.Error("the period counts from the end of the last checkpoint")
	}
	if NewOwn(Policy{Kind: None}, 0, 0, 0).Need(100, time.Hour) {
		t.Error("None checkpointed")
	}
}

// Auto's interval is Fialho et al. 2011 eq. 11 with the rank's own
// measurements and φ = 1, and Daly's where eq. 11 has no optimum.
func TestOwnAutoIsEq11(t *testing.T) {
	o := NewOwn(Policy{Kind: Auto, MTTI: time.Hour}, 0, 0, 0)
	o.Checkpointed(3, time.Minute, time.Minute+2*time.Second)
	o.Recovered(500*time.Millisecond, 3*time.Second)
	want, err := model.FialhoParallelInterval(model.IntervalInput{Cost: 2, MTTI: 3600, Restart: 0.5, LogReplay: 3, Phi: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Interval(2 * time.Minute).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Fatalf("interval %g s, want eq. 11's %g s", got, want)
	}
	end := time.Minute + 2*time.Second
	at := end + time.Duration(want*1e9)
	if o.Need(4, at-time.Second) || !o.Need(5, at+time.Millisecond) {
		t.Errorf("not due exactly %g s after the last checkpoint's end", want)
	}
	// Before a checkpoint is measured: the assumed cost; without an MTTI:
	// the rank's own estimate (run time / (failures+1)).
	o = NewOwn(Policy{Kind: Auto, AssumedCost: time.Second}, 0, 0, 1)
	want, _ = model.FialhoParallelInterval(model.IntervalInput{Cost: 1, MTTI: 50, Phi: 1})
	if got := o.Interval(100 * time.Second).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Errorf("interval %g s, want %g s (MTTI 100 s / 2)", got, want)
	}
	// Recovery longer than the MTTI: no optimum, Daly's interval.
	o = NewOwn(Policy{Kind: Auto, MTTI: 10 * time.Second}, 0, 0, 0)
	o.Checkpointed(1, 0, time.Second)
	o.Recovered(0, time.Minute)
	if got, want := o.Interval(0), AutoInterval(time.Second, 10*time.Second); got != want {
		t.Errorf("interval %v, want Daly's %v", got, want)
	}
}
