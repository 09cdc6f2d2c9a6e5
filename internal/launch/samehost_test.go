package launch

import (
	"slices"
	"testing"
)

func TestSameHost(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"node7", "node7", true},
		{"node7", "node7.cluster.org", true},
		{"node7.cluster.org", "node7", true},
		{"Node7", "node7.Cluster.org", true},
		{"node7.a.org", "node7.b.org", false},
		{"node7", "node8.cluster.org", false},
		{"node7", "node8", false},
		{"10.0.0.7", "10", false},
		{"10.0.0.7", "10.0.0.7", true},
		{"::1", "::1", true},
		{"", "node7", false},
		{"", "", true},
	} {
		if got := SameHost(c.a, c.b); got != c.want {
			t.Errorf("SameHost(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// A spare goes to a free host of the launcher's list even when the list
// names hosts by their fully qualified names and the ranks said their
// short ones: not to the host a node holds, nor to the failed node's.
func TestPlanMixedHostNames(t *testing.T) {
	var h hostList
	h.add([]string{"node0", "node0", "node1", "node1"}, []string{"a", "a", "b", "b"}, []string{"node1"})
	spare := func() ([]string, error) { return []string{"a.cluster.org", "b.cluster.org", "c.cluster.org"}, nil }
	p := h.plan([]string{"node0", "node0", "node2", "node2"}, spare)
	if want := []string{"a", "a", "c.cluster.org", "c.cluster.org"}; !slices.Equal(p.Pin, want) {
		t.Errorf("pin %q (%s), want %q", p.Pin, p.Unpinned, want)
	}
}
