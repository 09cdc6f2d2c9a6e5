package transfer

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ckpt/ckpt/internal/flush"
	"github.com/ckpt/ckpt/internal/manifest"
	"github.com/ckpt/ckpt/internal/stage"
)

// StagedConfig configures the staged transfer of one compute node.
type StagedConfig struct {
	// Addrs are the job's staging servers; each node talks to one.
	Addrs []string
	Token string // the secret the staging servers accept
	Node  string // this compute node
	// Source serves the node's cache to the server's pulls.
	Source stage.Source
	Logf   func(format string, args ...any)
	TLS    *tls.Config // the job's client TLS (jobtls.Config.Client); nil: plain TCP
}

// Staged is the non-blocking flush (Sato et al. 2012): Start announces the
// checkpoint to the node's staging server, which pulls it from the cache
// while the application computes; the flush is Pending until the server
// reports the node's part durable. One node's lowest rank runs it.
//
// The server journals what it pulls: a flush survives a restart of the
// server (the client reconnects and announces again what is not durable)
// and Cancel (the flush stays with the server; Resume, or a relaunched
// rank's client, takes it up again).
type Staged struct {
	cfg  StagedConfig
	addr string

	mu     sync.Mutex
	client *stage.Client // nil after Cancel
}

var _ flush.Transfer = (*Staged)(nil)

// NewStaged connects this node to its staging server. m is a checkpoint's
// manifest: its nodes, in name order, are dealt to the servers in turn, so
// that every server serves as many nodes as the others, give or take one.
func NewStaged(cfg StagedConfig, m *manifest.Manifest) *Staged {
	var nodes []string
	for _, p := range m.Parts {
		if !slices.Contains(nodes, p.Node) {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	s := &Staged{cfg: cfg, addr: cfg.Addrs[max(slices.Index(nodes, cfg.Node), 0)%len(cfg.Addrs)]}
	s.client = s.connect()
	return s
}

func (s *Staged) connect() *stage.Client {
	return stage.NewClient(stage.ClientConfig{Addr: s.addr, Token: s.cfg.Token, Node: s.cfg.Node,
		Source: s.cfg.Source, Logf: s.cfg.Logf, TLS: s.cfg.TLS})
}

// Addr is the staging server this node talks to.
func (s *Staged) Addr() string { return s.addr }

func (s *Staged) current() *stage.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// Start announces checkpoint name, committed in this node's cache; it
// returns at once. An error means the server will not pull it (the client
// was refused, or cancelled).
func (s *Staged) Start(ctx context.Context, name string) error {
	c := s.current()
	if c == nil {
		return fmt.Errorf("stage: flush %q: the transfer was cancelled", name)
	}
	raw, err := s.cfg.Source.Manifest(ctx, name)
	var m *manifest.Manifest
	if err == nil {
		m, err = manifest.Decode(raw)
	}
	if err != nil {
		return fmt.Errorf("reading the committed manifest: %w", err)
	}
	var ranks []int
	for _, p := range m.Parts {
		if p.Node == s.cfg.Node {
			ranks = append(ranks, p.Rank)
		}
	}
	return c.Announce(name, raw, ranks)
}

// State reports a flush this node announced.
func (s *Staged) State(name string) (flush.State, string, bool) {
	c := s.current()
	if c == nil {
		return 0, "", false
	}
	st, reason, ok := c.State(name)
	return st, reason, ok
}

// Latency is how long a finished flush took from its announcement.
func (s *Staged) Latency(name string) (time.Duration, bool) {
	if c := s.current(); c != nil {
		return c.Latency(name)
	}
	return 0, false
}

// Busy tells whether a flush of this node is still pending.
func (s *Staged) Busy() bool {
	c := s.current()
	return c != nil && c.Busy()
}

// Wait waits until no flush of this node is pending; an error if the
// server refused this client (none ever will be durable).
func (s *Staged) Wait(ctx context.Context) error {
	if c := s.current(); c != nil {
		return c.WaitIdle(ctx)
	}
	return ctx.Err()
}

// Pinned tells whether checkpoint name must stay in the cache: the server
// is still pulling it.
func (s *Staged) Pinned(name string) bool {
	c := s.current()
	return c != nil && c.Pinned(name)
}

// Cancel disconnects from the server: this node serves no more pulls.
// Flushes under way stay with the server (its journal keeps them), which
// takes them up again when a client of this node connects.
func (s *Staged) Cancel() error {
	s.mu.Lock()
	c := s.client
	s.client = nil
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// Resume connects again after Cancel: the server tells the new client
// which of this node's flushes it still has pending (its Welcome), and
// pulls them on. A no-op while connected.
func (s *Staged) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = s.connect()
	}
	return ctx.Err()
}
