package coord

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/wire"
)

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // the field named
	}{
		{Config{}, "Size 0"},
		{Config{Size: -1}, "Size -1"},
		{Config{Size: 1, Token: strings.Repeat("t", wire.MaxToken+1)}, "Token"},
		{Config{Size: 1, HeartbeatTimeout: -time.Second}, "HeartbeatTimeout"},
		{Config{Size: 1, HeartbeatTimeout: time.Second, HeartbeatInterval: time.Second}, "HeartbeatInterval"},
		{Config{Size: 1, MaxValue: wire.MaxValue + 1}, "MaxValue"},
		{Config{Size: 1, MaxContrib: -1}, "MaxContrib"},
		{Config{Size: 1, MaxStore: -1}, "MaxStore"},
		{Config{Size: 1, MaxWaits: -1}, "MaxWaits"},
		{Config{Size: 1, JoinTimeout: -time.Second}, "JoinTimeout"},
	} {
		_, err := New(tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want ErrConfig naming %s", tc.cfg, err, tc.want)
		}
	}
	m, err := New(Config{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.cfg; c.HeartbeatTimeout != DefaultHeartbeatTimeout || c.HeartbeatInterval != DefaultHeartbeatTimeout/3 ||
		c.MaxValue != wire.MaxValue || c.MaxContrib != DefaultMaxContrib || c.Decide == nil || c.JoinTimeout != DefaultJoinTimeout {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestNewRelayErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  RelayConfig
		want string
	}{
		{RelayConfig{}, "Ranks is empty"},
		{RelayConfig{Ranks: []int32{1, 1}}, "rank 1"},
		{RelayConfig{Ranks: []int32{-1}}, "rank -1"},
		{RelayConfig{Ranks: []int32{0}, Node: strings.Repeat("n", wire.MaxNode+1)}, "Node"},
		{RelayConfig{Ranks: []int32{0}, MaxFrame: -1}, "MaxFrame"},
		{RelayConfig{Ranks: []int32{0}, HeartbeatTimeout: -1}, "HeartbeatTimeout"},
	} {
		_, err := NewRelay(tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRelay(%+v) = %v, want ErrConfig naming %s", tc.cfg, err, tc.want)
		}
	}
}

// Connecting a live id is a driver bug, reported loudly.
func TestConnectTwicePanics(t *testing.T) {
	m, _ := New(Config{Size: 1})
	m.Connect(1, 0)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	m.Connect(1, 0)
}

// Reasons are clipped to what the wire carries, on a rune boundary.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", wire.MaxReason)
	got := clip(long)
	if len(got) > wire.MaxReason || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Fatalf("clip: %d bytes %q…", len(got), got[:10])
	}
	if _, err := wire.Encode(&wire.Abort{Reason: failReason([]int32{1}, strings.Repeat("n", 300), long)}); err != nil {
		t.Fatal(err)
	}
}

// Time never goes back: an event with an earlier time counts as the
// latest time seen, so a connection is not made older than it is.
func TestTimeMonotonic(t *testing.T) {
	m, _ := New(Config{Size: 1, HeartbeatTimeout: 10 * time.Second})
	m.Connect(1, 20*time.Second)
	m.Receive(1, &wire.Hello{Ranks: []int32{0}}, 20*time.Second) // the job runs
	m.Receive(1, &wire.Heartbeat{}, 5*time.Second)
	if rd := m.Tick(29 * time.Second); len(rd.Closes) != 0 {
		t.Fatalf("closed after 9s of silence: %v", rd.Closes)
	}
	if rd := m.Tick(31 * time.Second); len(rd.Closes) != 1 {
		t.Fatalf("not closed after 11s of silence: %v", rd)
	}
}

func TestValue(t *testing.T) {
	m, _ := New(Config{Size: 1})
	m.Connect(1, 0)
	m.Receive(1, &wire.Hello{Ranks: []int32{0}}, 0)
	m.Receive(1, &wire.Publish{Req: 1, Key: "addr/0", Value: []byte("h:1")}, 0)
	if v, ok := m.Value("addr/0"); !ok || string(v) != "h:1" {
		t.Fatalf("Value = %q %v", v, ok)
	}
	if _, ok := m.Value("addr/1"); ok {
		t.Fatal("Value of an unpublished key")
	}
}
