package coord

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

// Defaults of the zero fields of Config and RelayConfig.
const (
	DefaultHeartbeatTimeout = 30 * time.Second
	// DefaultJoinTimeout is generous: ranks started by srun or mpirun on
	// a busy machine may start minutes apart.
	DefaultJoinTimeout = 10 * time.Minute
	DefaultMaxContrib  = 64 << 10
	DefaultMaxStore    = 64 << 20
	DefaultMaxWaits    = 16
)

// ErrConfig is wrapped by the errors of New and NewRelay.
var ErrConfig = errors.New("invalid configuration")

// DecideFunc is the coordinator's policy for decide collectives: given
// collective seq and every rank's contribution (indexed by rank), it returns
// the answer every rank gets. It must be a pure function of its arguments:
// it runs inside the state machine, and a test replaying the same events
// must get the same answers. It must not keep or modify contribs.
//
// An error says the contributions are not ones the policy can decide on
// (a rank sent a malformed or out-of-range one): the job is aborted with
// it as the reason, as it is when a rank breaks the protocol, since an
// answer made up from bad input would be taken by every rank as the
// policy's. A *RankError names the rank to blame.
type DecideFunc func(seq uint64, contribs [][]byte) ([]byte, error)

// RankError is a DecideFunc's error that blames one rank's contribution:
// the abort names that rank and its node, as for any failure of a rank.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }
func (e *RankError) Unwrap() error { return e.Err }

// DecideRank0 is the default policy: rank 0's contribution is the answer.
func DecideRank0(_ uint64, contribs [][]byte) ([]byte, error) { return contribs[0], nil }

// Config configures the coordinator. Zero fields take the defaults said.
type Config struct {
	// Size is the number of ranks of the job, at least 1.
	Size int
	// Token is the job's shared secret; a Hello must carry it.
	Token string
	// Incarnation numbers the job's runs (a relaunch after a failure gets
	// the next one); a Hello must carry it, so that ranks left over from an
	// earlier run cannot join.
	Incarnation uint64
	// HeartbeatTimeout is how long a connection may stay silent before it
	// counts as failed. Default DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// HeartbeatInterval is how long the machine lets a connection go
	// without a message before it sends a Heartbeat. Default a third of
	// HeartbeatTimeout; it must be shorter than the timeout.
	HeartbeatInterval time.Duration
	// JoinTimeout bounds admission: if some rank has not joined this long
	// after the machine's first event, the job aborts with a reason naming
	// the ranks missing. Ranks that joined wait for the others without
	// heartbeats either way (see the package documentation), so this, not
	// the heartbeat timeout, is how long ranks may start apart. Default
	// DefaultJoinTimeout.
	JoinTimeout time.Duration
	// MaxContrib bounds one rank's contribution to a collective, in bytes,
	// so that the coordinator holds at most Size*MaxContrib per collective.
	// Default DefaultMaxContrib. Results are read with a frame limit of
	// wire.ResultLimit(Size, MaxContrib).
	MaxContrib int
	// MaxValue bounds a value of the key–value service. Default and maximum
	// wire.MaxValue.
	MaxValue int
	// MaxStore bounds the bytes of all keys and values stored. Default
	// DefaultMaxStore.
	MaxStore int
	// MaxWaits bounds the lookups with wait a connection may have parked,
	// per rank it holds. Default DefaultMaxWaits.
	MaxWaits int
	// Decide is the policy of decide collectives. Default DecideRank0.
	Decide DecideFunc
	// Relays says the clients are nodes' relays (tree mode), which dial
	// again when their connection drops. A relay's connection lost while
	// the job runs then detaches its ranks instead of aborting the job:
	// a Hello for exactly those ranks, from the same node, resumes them
	// on the new connection, as long as the heartbeat timeout has not
	// declared them lost (counted from the last message the old
	// connection brought). See the package documentation, "Resuming".
	Relays bool
	// Uncoordinated says the ranks checkpoint on their own and log the
	// messages they receive (package uncoord): a rank lost while the job
	// runs is vacated for its next process to rejoin, instead of
	// aborting the job, unless a collective needs it. See the package
	// documentation, "Recovering one rank alone". Not with Relays.
	Uncoordinated bool
}

// RelayConfig configures a node's sub-coordinator. Zero fields take the
// defaults of Config; limits should be the coordinator's, so that the relay
// blames the local rank that breaks one rather than the coordinator blaming
// the whole node.
type RelayConfig struct {
	// Token and Incarnation are checked on local Hellos and sent upstream.
	Token       string
	Incarnation uint64
	// Node names this node in the Hello sent upstream and in reasons.
	Node string
	// Ranks are the ranks expected on this node; the relay joins upstream
	// when all of them have joined locally.
	Ranks []int32
	// HeartbeatTimeout and HeartbeatInterval apply to the local
	// connections and to the upstream one.
	HeartbeatTimeout  time.Duration
	HeartbeatInterval time.Duration
	MaxContrib        int
	MaxValue          int
	MaxWaits          int
	// MaxFrame bounds the payload of a merged Collective sent upstream; a
	// node's contributions are split over several frames when they do not
	// fit. It must not exceed the coordinator's request frame limit.
	// Default wire.DefaultLimit.
	MaxFrame int
}

func (c *Config) setDefaults() error {
	if c.Size < 1 || c.Size > math.MaxInt32 {
		return fmt.Errorf("coord: %w: Size %d is not in [1, %d]", ErrConfig, c.Size, math.MaxInt32)
	}
	if len(c.Token) > wire.MaxToken {
		return fmt.Errorf("coord: %w: Token of %d bytes exceeds %d", ErrConfig, len(c.Token), wire.MaxToken)
	}
	if err := heartbeatDefaults(&c.HeartbeatTimeout, &c.HeartbeatInterval); err != nil {
		return err
	}
	if c.JoinTimeout < 0 {
		return fmt.Errorf("coord: %w: JoinTimeout %v is negative", ErrConfig, c.JoinTimeout)
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = DefaultJoinTimeout
	}
	if err := limitDefault("MaxContrib", &c.MaxContrib, DefaultMaxContrib, wire.DefaultLimit); err != nil {
		return err
	}
	if err := limitDefault("MaxValue", &c.MaxValue, wire.MaxValue, wire.MaxValue); err != nil {
		return err
	}
	if err := limitDefault("MaxStore", &c.MaxStore, DefaultMaxStore, math.MaxInt); err != nil {
		return err
	}
	if err := limitDefault("MaxWaits", &c.MaxWaits, DefaultMaxWaits, 1<<20); err != nil {
		return err
	}
	if c.Decide == nil {
		c.Decide = DecideRank0
	}
	if c.Uncoordinated && c.Relays {
		return fmt.Errorf("coord: %w: Uncoordinated with Relays is not supported: a relay's lost link stands for a node's ranks, which cannot rejoin one by one", ErrConfig)
	}
	return nil
}

func (c *RelayConfig) setDefaults() error {
	if len(c.Token) > wire.MaxToken {
		return fmt.Errorf("coord: %w: Token of %d bytes exceeds %d", ErrConfig, len(c.Token), wire.MaxToken)
	}
	if len(c.Node) > wire.MaxNode {
		return fmt.Errorf("coord: %w: Node of %d bytes exceeds %d", ErrConfig, len(c.Node), wire.MaxNode)
	}
	if len(c.Ranks) == 0 {
		return fmt.Errorf("coord: %w: Ranks is empty", ErrConfig)
	}
	seen := make(map[int32]bool, len(c.Ranks))
	for _, r := range c.Ranks {
		if r < 0 || seen[r] {
			return fmt.Errorf("coord: %w: Ranks: rank %d is negative or listed twice", ErrConfig, r)
		}
		seen[r] = true
	}
	if err := heartbeatDefaults(&c.HeartbeatTimeout, &c.HeartbeatInterval); err != nil {
		return err
	}
	if err := limitDefault("MaxContrib", &c.MaxContrib, DefaultMaxContrib, wire.DefaultLimit); err != nil {
		return err
	}
	if err := limitDefault("MaxValue", &c.MaxValue, wire.MaxValue, wire.MaxValue); err != nil {
		return err
	}
	if err := limitDefault("MaxWaits", &c.MaxWaits, DefaultMaxWaits, 1<<20); err != nil {
		return err
	}
	return limitDefault("MaxFrame", &c.MaxFrame, wire.DefaultLimit, math.MaxUint32)
}

func heartbeatDefaults(timeout, interval *time.Duration) error {
	if *timeout < 0 {
		return fmt.Errorf("coord: %w: HeartbeatTimeout %v is negative", ErrConfig, *timeout)
	}
	if *timeout == 0 {
		*timeout = DefaultHeartbeatTimeout
	}
	if *interval < 0 || *interval >= *timeout {
		return fmt.Errorf("coord: %w: HeartbeatInterval %v is not in [0, HeartbeatTimeout %v)", ErrConfig, *interval, *timeout)
	}
	if *interval == 0 {
		*interval = *timeout / 3
	}
	return nil
}

func limitDefault(name string, v *int, def, max int) error {
	if *v < 0 || *v > max {
		return fmt.Errorf("coord: %w: %s %d is not in [0, %d]", ErrConfig, name, *v, max)
	}
	if *v == 0 {
		*v = def
	}
	return nil
}
