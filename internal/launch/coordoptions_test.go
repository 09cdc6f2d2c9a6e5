package launch

import (
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
)

// ckpt coordinator's flags: defaults when not given, and errors naming the
// flag and value, in the order the command has always checked them.
func TestCoordinatorOptions(t *testing.T) {
	given := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, g := range names {
				if g == n {
					return true
				}
			}
			return false
		}
	}
	f, err := CoordinatorOptions{Ranks: 3, Listen: ":7077", Interval: "auto"}.Coordinators()
	if err != nil {
		t.Fatal(err)
	}
	if f.Ranks != 3 || f.Nodes != 1 || f.Listen != ":7077" || f.HeartbeatTimeout != 30*time.Second || f.JoinTimeout != coord.DefaultJoinTimeout {
		t.Errorf("defaults: %+v", f)
	}
	f, err = CoordinatorOptions{Ranks: 1, Interval: "10steps", Heartbeat: 1.5, JoinTimeout: 2,
		Given: given("heartbeat-timeout", "join-timeout")}.Coordinators()
	if err != nil {
		t.Fatal(err)
	}
	if f.HeartbeatTimeout != 1500*time.Millisecond || f.JoinTimeout != 2*time.Second || f.Policy.Steps != 10 {
		t.Errorf("given: %+v", f)
	}
	for _, c := range []struct {
		o    CoordinatorOptions
		want string
	}{
		{CoordinatorOptions{Ranks: 0, Interval: "bogus"}, "--ranks 0: need at least 1"},
		{CoordinatorOptions{Ranks: 2, Interval: "bogus", JoinTimeout: -1, Given: given("join-timeout")}, "--interval: "},
		{CoordinatorOptions{Ranks: 2, Interval: "auto", JoinTimeout: 0, Given: given("join-timeout")}, "--join-timeout 0s: need a positive duration"},
	} {
		if _, err := c.o.Coordinators(); err == nil || len(err.Error()) < len(c.want) || err.Error()[:len(c.want)] != c.want {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
