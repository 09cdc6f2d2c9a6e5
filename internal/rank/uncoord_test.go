package rank

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/msglog/logstore"
	"github.com/ckpt/ckpt/internal/peer"
	"github.com/ckpt/ckpt/internal/placement"
	"github.com/ckpt/ckpt/internal/storage/local"
)

func TestMemberEncoding(t *testing.T) {
	m := member{Member: placement.Member{Rank: 3, Node: "node1", Domain: "rack0"}, Cache: "/c/node1"}
	got, err := decodeMember(3, m.encode())
	if err != nil || got != m {
		t.Fatalf("round trip of %+v: %+v, %v", m, got, err)
	}
	m.Domain = ""
	if got, err := decodeMember(3, m.encode()); err != nil || got != m {
		t.Fatalf("round trip without a domain: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "node\n\n", "\nd\n/c", "a\nb", "a\nb\nc\nd"} {
		if _, err := decodeMember(0, []byte(bad)); err == nil {
			t.Errorf("decodeMember(%q) accepted it", bad)
		}
	}
}

// Each rank's checkpoints go to its node's cache and its protector's
// (the next rank on another node, RADIC's ring); its log to its
// protector's; with every rank on one node, its own cache holds both.
func TestProtectorDirectories(t *testing.T) {
	u := &uncoordinated{members: []member{
		{Member: placement.Member{Rank: 0, Node: "n0"}, Cache: "/c/n0"},
		{Member: placement.Member{Rank: 1, Node: "n0"}, Cache: "/c/n0"},
		{Member: placement.Member{Rank: 2, Node: "n1"}, Cache: "/c/n1"},
	}}
	for rank, want := range map[int][2]string{0: {"/c/n0", "/c/n1"}, 1: {"/c/n0", "/c/n1"}, 2: {"/c/n1", "/c/n0"}} {
		own, prot, err := u.dirs(rank)
		if err != nil || own != want[0] || prot != want[1] {
			t.Errorf("rank %d: %s, %s, %v; want %s, %s", rank, own, prot, err, want[0], want[1])
		}
	}
	if _, _, err := u.dirs(3); err == nil {
		t.Error("a rank whose place is not known has directories")
	}
	one := &uncoordinated{members: u.members[:2]}
	if own, prot, err := one.dirs(1); err != nil || own != "/c/n0" || prot != "/c/n0" {
		t.Errorf("one node: %s, %s, %v; want its own cache twice", own, prot, err)
	}
}

// The peers a rank publishes for φ: none before its first step; at each
// step those it exchanged with so far, sorted; an exchange after its last
// step (a gather) is not in them; a process restarted alone goes on from
// its predecessor's.
func TestPeersPattern(t *testing.T) {
	var u uncoordinated
	u.talked(4)
	if _, ok := u.peers(); ok {
		t.Fatal("a pattern before the first step")
	}
	u.talked(1)
	u.talked(4)
	u.stepDone()
	if p, ok := u.peers(); !ok || !slices.Equal(p, []int{1, 4}) {
		t.Errorf("after a step: %v, %v; want [1 4]", p, ok)
	}
	u.talked(0) // the gather after the last step
	if p, _ := u.peers(); !slices.Equal(p, []int{1, 4}) {
		t.Errorf("after the gather: %v, want [1 4]", p)
	}
	var next uncoordinated
	next.inherit([]int{4, 1})
	next.talked(2)
	next.stepDone()
	if p, ok := next.peers(); !ok || !slices.Equal(p, []int{1, 2, 4}) {
		t.Errorf("restarted alone: %v, %v; want [1 2 4]", p, ok)
	}
}

// The log's appends are synced when the job's cache syncs its files (node
// durability) and not when it does not (process durability:
// local.WithoutSync, which CKPT_CACHE_DURABILITY=process gives the cache,
// TestCacheDurabilityReachesCache in package ckpt).
func TestLogFollowsCacheDurability(t *testing.T) {
	for _, nosync := range []bool{false, true} {
		dir := t.TempDir()
		var opts []local.Option
		if nosync {
			opts = append(opts, local.WithoutSync())
		}
		cache, err := local.New(dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := logProtectors(cache, func(int) (string, error) { return dir, nil }).OpenLog(2)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.(*logstore.File).Synced(); got == nosync {
			t.Errorf("cache without sync %v: the log's appends synced = %v", nosync, got)
		}
		s.Close()
	}
}

// Under the strategy the application can neither send nor receive on the
// collectives' tag: a Recv on it would take a collective's message.
func TestCollectiveTagReserved(t *testing.T) {
	r := &Runtime{peers: &peer.Node{}, u: &uncoordinated{}}
	if err := r.Send(context.Background(), 1, CollectiveTag, nil); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("Send on CollectiveTag: %v, want it refused", err)
	}
	if _, err := r.Recv(context.Background(), 1, CollectiveTag, nil); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("Recv on CollectiveTag: %v, want it refused", err)
	}
}
