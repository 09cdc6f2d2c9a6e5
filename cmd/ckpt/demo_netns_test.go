package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/coord"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/netns"
	"github.com/ckpt/ckpt/internal/netns/netnstest"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/policy"
)

// jobHosts are a host per node of jobSpec's job and one for its
// coordinator, removed at the test's end.
func jobHosts(t *testing.T, spec runSpec) *netns.Net {
	t.Helper()
	return netnstest.New(t, append(launch.NodeNames(spec.nodes), coordHost)...)
}

// firstCoord has c hand the first attempt's coordinator to the channel.
func firstCoord(c *launch.Config) <-chan launch.Coordinator {
	newCoord := c.NewCoordinator
	first := make(chan launch.Coordinator, 1)
	c.NewCoordinator = func(inc uint64, token string) (launch.Coordinator, error) {
		co, err := newCoord(inc, token)
		if err == nil && inc == 0 {
			first <- co
		}
		return co, err
	}
	return first
}

// healOnFail has c call heal once, when the first attempt has failed and
// before the next starts: the lost host comes back.
func healOnFail(t *testing.T, c *launch.Config, heal func() error) *atomic.Bool {
	var healed atomic.Bool
	event := c.Event
	c.Event = func(e launch.Event) {
		if e.Kind == "fail" && !healed.Load() {
			if err := heal(); err != nil {
				t.Errorf("healing: %v", err)
			}
			healed.Store(true)
		}
		event(e)
	}
	return &healed
}

// A job with its 4 nodes on 4 hosts and its coordinator on a fifth: the
// ranks advertise their hosts' addresses, checkpoint (parity streamed
// between the hosts), lose node 1 with its cache, and the relaunch
// rebuilds it from the other hosts: nothing depends on one shared address.
func TestNetnsNodeLossRebuilds(t *testing.T) {
	spec, log := jobSpec(t)
	hosts := jobHosts(t, spec)
	var mu sync.Mutex
	advertised := map[int]string{}
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		launch.OnHosts(c, coords, hosts, coordHost)
		first := firstCoord(c)
		ch := make(chan []int, 1)
		c.Inject, c.NodeFailures = ch, true
		afterCommits(coords, 2, func() {
			co := <-first
			mu.Lock()
			for r := range spec.ranks {
				v, _ := co.Value(peer.AddrKey(r))
				advertised[r] = string(v)
			}
			mu.Unlock()
			ch <- []int{1}
		})
	})
	if res.Injected != 1 || res.Restarts["rebuild"] != 1 || len(res.Attempts) != 2 {
		t.Errorf("injected %d, restarts %v, attempts %d; want node 1 lost and one restart rebuilding it\n%s",
			res.Injected, res.Restarts, len(res.Attempts), log)
	}
	mu.Lock()
	defer mu.Unlock()
	for r := range spec.ranks {
		host, _, err := net.SplitHostPort(advertised[r])
		want := hosts.Addr(launch.NodeNames(spec.nodes)[launch.NodeOf(r, spec.ranks, spec.nodes)])
		if err != nil || host != want {
			t.Errorf("rank %d advertised %q, want its host's address %s", r, advertised[r], want)
		}
	}
}

// cutAtCheckpoint cuts host's link as the first launch decides its
// third checkpoint (two are committed): in the coordinator's loop, before
// the answer goes out, so that the other nodes' ranks are inside that
// checkpoint's commit rounds while host's never hear of it.
func cutAtCheckpoint(t *testing.T, coords *launch.Coordinators, host *netns.Host) {
	var armed, cut atomic.Bool
	afterCommits(coords, 2, func() { armed.Store(true) })
	coords.OnDecision = func(step int64, d policy.Decision) {
		if d.Checkpoint && armed.Load() && !cut.Swap(true) {
			if err := host.LinkDown(); err != nil {
				t.Errorf("cutting %s's link: %v", host.Name, err)
			}
		}
	}
}

// A host that loses its link mid-commit: the coordinator finds its rank
// silent, the attempt ends naming it, and once the link is back the
// relaunch restores the last checkpoint committed (the one cut short is
// not), with the failure-free result.
func TestNetnsLinkDownMidCommit(t *testing.T) {
	spec, log := jobSpec(t)
	spec.heartbeat = 3 * time.Second
	hosts := jobHosts(t, spec)
	node2 := hosts.Host("node2")
	var healed *atomic.Bool
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		launch.OnHosts(c, coords, hosts, coordHost)
		cutAtCheckpoint(t, coords, node2)
		healed = healOnFail(t, c, node2.LinkUp)
	})
	if !healed.Load() || len(res.Attempts) != 2 {
		t.Fatalf("attempts %+v: want one failure, then one relaunch\n%s", res.Attempts, log)
	}
	if f := res.Attempts[0].Failure; !strings.Contains(f, "rank 2") || !strings.Contains(f, "heartbeat") {
		t.Errorf("the first attempt ended with %q: want rank 2's heartbeat timeout named\n%s", f, log)
	}
	if res.Restarts["cache"] != 1 {
		t.Errorf("restarts %v: a host cut off loses no cache; want a restart from the caches", res.Restarts)
	}
}

// A host that loses its link mid-pull: node 1 is lost with its cache,
// and as the relaunched job's ranks have joined, ready to pull node 1's
// files from its peers' parity, node 1's link goes down. That restart
// fails naming node 1's rank; with the link back, the next rebuilds node
// 1 and the result is the failure-free one (every byte is checked
// against the manifest's hash before the application reads it).
func TestNetnsLinkDownMidPull(t *testing.T) {
	spec, log := jobSpec(t)
	spec.heartbeat = 3 * time.Second
	hosts := jobHosts(t, spec)
	node1 := hosts.Host("node1")
	var cut atomic.Bool
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		launch.OnHosts(c, coords, hosts, coordHost)
		injectAfter(c, coords, 1)
		c.NodeFailures = true
		coords.OnNotice = func(inc uint64, n coord.Notice) {
			if inc == 1 && n.Kind == coord.NoticeStarted && !cut.Swap(true) {
				if err := node1.LinkDown(); err != nil {
					t.Errorf("cutting node1's link: %v", err)
				}
			}
		}
		event := c.Event
		c.Event = func(e launch.Event) {
			// The node's loss is the first failure; the cut, the second.
			if e.Kind == "fail" && e.Incarnation == 1 {
				if err := node1.LinkUp(); err != nil {
					t.Errorf("restoring node1's link: %v", err)
				}
			}
			event(e)
		}
	})
	if !cut.Load() || len(res.Attempts) != 3 {
		t.Fatalf("attempts %+v: want the node lost, the restart cut off, then one that rebuilds\n%s", res.Attempts, log)
	}
	if f := res.Attempts[1].Failure; !strings.Contains(f, "rank 1") {
		t.Errorf("the cut-off restart ended with %q: want node 1's rank named\n%s", f, log)
	}
	if res.Restarts["rebuild"] < 1 {
		t.Errorf("restarts %v: want node 1 rebuilt from parity", res.Restarts)
	}
}

// The coordinator's host loses its link: every rank falls silent to it,
// the attempt ends, and once the host is back the relaunch (a new
// coordinator on it) restores from the caches.
func TestNetnsCoordinatorHostLost(t *testing.T) {
	spec, log := jobSpec(t)
	spec.heartbeat = 3 * time.Second
	hosts := jobHosts(t, spec)
	co := hosts.Host(coordHost)
	var healed *atomic.Bool
	res := runScripted(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		launch.OnHosts(c, coords, hosts, coordHost)
		afterCommits(coords, 2, func() {
			if err := co.LinkDown(); err != nil {
				t.Errorf("cutting the coordinator's link: %v", err)
			}
		})
		healed = healOnFail(t, c, co.LinkUp)
	})
	if !healed.Load() || len(res.Attempts) != 2 || res.Restarts["cache"] != 1 {
		t.Errorf("attempts %d, restarts %v: want one relaunch restoring from the caches\n%s", len(res.Attempts), res.Restarts, log)
	}
	if f := res.Attempts[0].Failure; !strings.Contains(f, "heartbeat") {
		t.Errorf("the first attempt ended with %q: want the ranks' silence named\n%s", f, log)
	}
}

// The coordinator's host lost for good: the job does not hang; each
// relaunch's ranks cannot join, and the job ends with its retries
// exhausted, naming the ranks that never joined.
func TestNetnsCoordinatorHostGone(t *testing.T) {
	spec, log := jobSpec(t)
	spec.heartbeat = 3 * time.Second
	spec.joinTimeout = 10 * time.Second
	spec.retries = 1
	hosts := jobHosts(t, spec)
	cfg, coords, err := spec.config()
	if err != nil {
		t.Fatal(err)
	}
	launch.OnHosts(&cfg, coords, hosts, coordHost)
	afterCommits(coords, 2, func() {
		if err := hosts.Host(coordHost).LinkDown(); err != nil {
			t.Errorf("cutting the coordinator's link: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := spec.launch(ctx, cfg, coords)
	if !errors.Is(err, launch.ErrRetriesExhausted) {
		t.Fatalf("err %v: want the retries exhausted\n%s", err, log)
	}
	if len(res.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2\n%s", len(res.Attempts), log)
	}
	last := res.Attempts[1].Failure
	if !strings.Contains(last, "did not join") || !strings.Contains(last, fmt.Sprintf("(0 of %d ranks joined)", spec.ranks)) {
		t.Errorf("the relaunch ended with %q: want every rank named as missing\n%s", last, log)
	}
	t.Logf("first attempt: %s; relaunch: %s", res.Attempts[0].Failure, last)
}

// ckpt demo --netns: the demo's jobs with every node on a host of its
// own; the JSON is the demo's, with netns true.
func TestDemoNetnsJSON(t *testing.T) {
	netnstest.Available(t)
	t.Setenv(asCkpt, "1")
	code, stdout, stderr := runCLI(t, "demo", "--netns", "--size", "xs", "--iterations", "150",
		"--mtti", "20s", "--seed", "474644", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	obj := decodeOne(t, stdout)
	if obj["netns"] != true || obj["result_matches_reference"] != true {
		t.Errorf("netns %v, result_matches_reference %v\n%s", obj["netns"], obj["result_matches_reference"], stderr)
	}
	if n := getNum(t, obj, "failures_injected"); n != 1 {
		t.Errorf("%v failures injected, want 1\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "nodes as hosts: 5 hosts in network namespaces") {
		t.Errorf("no notice of the hosts:\n%s", stderr)
	}
	// Without --netns the key is absent: the demo's JSON is unchanged.
}

// --netns does not combine with --flush yet: refused, before anything runs.
func TestDemoNetnsFlushRefused(t *testing.T) {
	code, _, stderr := runCLI(t, "demo", "--netns", "--flush", "blocking")
	if code != exitUsage || !strings.Contains(stderr, "--netns with --flush") {
		t.Errorf("exit %d, stderr %q: want a usage error", code, stderr)
	}
}
