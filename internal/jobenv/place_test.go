package jobenv

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// Under mpirun or srun every rank gets the same environment: each derives
// its node from its launcher's rank and VarNodes (the block mapping of
// ckpt run's own ranks), and its cache from VarCacheRoot and its node.
func TestNodeFromLauncherRank(t *testing.T) {
	for _, launcher := range [][2]string{{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}} {
		for r := range 6 {
			env := map[string]string{launcher[0]: fmt.Sprint(r), launcher[1]: "6",
				VarNodes: "3", VarCacheRoot: "/job"}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			// As the rank runtime reads it: the node only.
			e, err := LookupOnly(lookup, map[string]bool{VarNode: true})
			want := NodeName(r / 2)
			if err != nil || e.Node != want {
				t.Errorf("%s=%d: node %q, %v; want %s", launcher[0], r, e.Node, err, want)
			}
			// As the store reads it: the cache only.
			e, err = LookupOnly(lookup, map[string]bool{VarCache: true})
			if err != nil || e.Cache != filepath.Join("/job", want) {
				t.Errorf("%s=%d: cache %q, %v; want /job/%s", launcher[0], r, e.Cache, err, want)
			}
		}
	}
}

// A list of names places ranks on those nodes (a launch that leaves a node
// out); what a launcher gives each rank itself wins.
func TestNodesListAndOverrides(t *testing.T) {
	env := map[string]string{VarRank: "3", VarSize: "4", VarNodes: "a,c", VarCacheRoot: "/job"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	e, err := Lookup(lookup)
	if err != nil || e.Node != "c" || e.Cache != "/job/c" {
		t.Errorf("rank 3 of 4 on a,c: node %q cache %q, %v", e.Node, e.Cache, err)
	}
	env[VarNode], env[VarCache] = "mine", "/elsewhere"
	if e, err := Lookup(lookup); err != nil || e.Node != "mine" || e.Cache != "/elsewhere" {
		t.Errorf("with %s and %s: node %q cache %q, %v", VarNode, VarCache, e.Node, e.Cache, err)
	}
}

func TestNodesBad(t *testing.T) {
	for _, v := range []string{"0", "-2", "a/b", " , "} {
		_, err := FromEnviron([]string{VarNodes + "=" + v})
		var je *Error
		if !errors.As(err, &je) || je.Name != VarNodes {
			t.Errorf("%s=%q: %v, want an error naming %s", VarNodes, v, err, VarNodes)
		}
	}
	// More nodes than ranks: a node would hold no rank.
	_, err := FromEnviron([]string{"SLURM_PROCID=0", "SLURM_NTASKS=2", VarNodes + "=3"})
	if err == nil {
		t.Error("3 nodes for 2 ranks passed")
	}
	// A launcher's rank that is not one of its size is no identity: an
	// error (one rank for the nodes), not a rank past the last node.
	for _, pair := range [][2]string{{"5", "2"}, {"-1", "2"}, {"0", "0"}} {
		_, err := FromEnviron([]string{"OMPI_COMM_WORLD_RANK=" + pair[0], "OMPI_COMM_WORLD_SIZE=" + pair[1], VarNodes + "=2"})
		var je *Error
		if !errors.As(err, &je) || je.Name != VarNodes {
			t.Errorf("rank %s of %s on 2 nodes: %v, want an error naming %s", pair[0], pair[1], err, VarNodes)
		}
	}
}

func TestProcRoundTrip(t *testing.T) {
	for _, p := range []Proc{{Host: "h1", PID: 4242}, {Host: "h1", PID: 4242, Node: "n3"}} {
		if got, err := DecodeProc(p.Encode()); err != nil || got != p {
			t.Errorf("round trip: %+v, %v", got, err)
		}
	}
	if w := (Proc{Host: "h1", PID: 1, Node: "n3"}).Where(); w != "n3" {
		t.Errorf("Where with a node: %q, want the node's name n3", w)
	}
	if w := (Proc{Host: "h1", PID: 1}).Where(); w != "h1" {
		t.Errorf("Where without a node: %q, want the host h1", w)
	}
	for _, bad := range []string{"", "h1", "h1 x", " 12", "h1 -3", "h1 12 ", "h1 12 n1 x"} {
		if _, err := DecodeProc([]byte(bad)); err == nil {
			t.Errorf("DecodeProc(%q) passed", bad)
		}
	}
}
