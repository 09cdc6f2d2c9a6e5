package launch

import (
	"fmt"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/policy"
)

// CoordinatorOptions are `ckpt coordinator`'s settings as its flags give
// them (times in seconds): the coordinator of one launch of a job whose
// ranks another launcher (srun, mpirun) starts. Coordinators checks them.
type CoordinatorOptions struct {
	Ranks       int
	Listen      string
	Interval    string
	Heartbeat   float64 // --heartbeat-timeout, if given
	JoinTimeout float64 // --join-timeout, if given
	// Given reports whether the flag of that name was given (nil: none).
	Given func(flag string) bool
}

// DefaultCoordinatorHeartbeat is `ckpt coordinator`'s heartbeat timeout
// when --heartbeat-timeout is not given (its help says 30s; ckpt run's is
// DefaultHeartbeat).
const DefaultCoordinatorHeartbeat = 30 * time.Second

func (o CoordinatorOptions) given(flag string) bool { return o.Given != nil && o.Given(flag) }

// Coordinators checks the options and returns the coordinators they
// describe (one node: the coordinator does not know the ranks' machines).
// Its errors are the user's to fix, each naming the flag and the value, in
// the order ckpt coordinator has always checked them.
func (o CoordinatorOptions) Coordinators() (*Coordinators, error) {
	if o.Ranks < 1 {
		return nil, fmt.Errorf("--ranks %d: need at least 1", o.Ranks)
	}
	p, err := policy.Parse(o.Interval)
	if err != nil {
		return nil, fmt.Errorf("--interval: %v", err)
	}
	hb := DefaultCoordinatorHeartbeat
	if o.given("heartbeat-timeout") {
		hb = seconds(o.Heartbeat)
	}
	jt := coord.DefaultJoinTimeout
	if o.given("join-timeout") {
		if o.JoinTimeout <= 0 {
			return nil, fmt.Errorf("--join-timeout %gs: need a positive duration", o.JoinTimeout)
		}
		jt = seconds(o.JoinTimeout)
	}
	return &Coordinators{Ranks: o.Ranks, Nodes: 1, Policy: p, HeartbeatTimeout: hb, JoinTimeout: jt, Listen: o.Listen}, nil
}
