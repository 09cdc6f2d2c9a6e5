package scr

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/policy"
	"github.com/ckpt/ckpt/internal/rank"
)

// Coordinator is the job's coordinator, started by rank 0 of a job that
// runs under plain mpirun (under ckpt run, the launcher's is used).
type Coordinator struct {
	c launch.Coordinator
	// Info is what rank 0 broadcasts to the ranks: "ADDR TOKEN".
	Info string
}

// UnderLauncher says whether ckpt run started the job (its coordinator
// is then used).
func UnderLauncher(env func(string) (string, bool)) bool {
	v, ok := env(jobenv.VarCoord)
	return ok && v != ""
}

// StartCoordinator starts the coordinator of a job of size ranks on this
// host: on loopback when every rank runs here, else on every interface,
// reached at this host's name.
func StartCoordinator(size int, oneHost bool) (*Coordinator, error) {
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tok)
	f := &launch.Coordinators{Ranks: size, Nodes: 1, Policy: policy.Policy{Kind: policy.None}}
	if !oneHost {
		f.Listen = ":0"
	}
	c, err := f.New(0, token)
	if err != nil {
		return nil, fmt.Errorf("starting the job's coordinator: %w", err)
	}
	addr := c.Addr()
	if !oneHost {
		host, err := os.Hostname()
		if err != nil {
			c.Close()
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort(host, port)
	}
	return &Coordinator{c: c, Info: addr + " " + token}, nil
}

// Wait waits until every rank left the job (or timeout), then stops the
// coordinator.
func (c *Coordinator) Wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-c.c.Done():
		err = c.c.Err()
	case <-t.C:
		err = fmt.Errorf("the job's coordinator: ranks still connected after %v", timeout)
	}
	return errors.Join(err, c.c.Close())
}

// Close stops the coordinator at once.
func (c *Coordinator) Close() error { return c.c.Close() }

// Join connects this rank to its job: to the coordinator info names
// ("ADDR TOKEN", from StartCoordinator), or under ckpt run to the
// launcher's. A job of one rank without a launcher gets a runtime of its
// own, without a Comm.
func Join(ctx context.Context, rnk, size int, node, info string, env func(string) (string, bool)) (*rank.Runtime, error) {
	set := jobenv.Env{Rank: rnk, Size: size, Node: node}
	if !UnderLauncher(env) && size > 1 {
		addr, token, ok := strings.Cut(info, " ")
		if !ok {
			return nil, fmt.Errorf("no coordinator address from rank 0 (%q)", info)
		}
		set.Coord, set.Token = addr, token
	}
	cfg, err := rank.Configure(rank.Options{Set: set}, env)
	if err != nil {
		return nil, err
	}
	return rank.Join(ctx, cfg)
}
