package scr

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// Under ckpt run --launcher mpirun or srun every rank gets the same
// CKPT_NODES and CKPT_CACHE_ROOT: its node is the one its rank falls on
// (blocks), its cache that node's under the root. CKPT_SCR_NODES and
// CKPT_NODE still win; without any, the host is the node.
func TestNodeForLauncherMapping(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		rank, size int
		node       string
		cache      string
	}{
		{map[string]string{jobenv.VarNodes: "2", jobenv.VarCacheRoot: "/job"}, 1, 4, "node0", "/job/node0"},
		{map[string]string{jobenv.VarNodes: "2", jobenv.VarCacheRoot: "/job"}, 2, 4, "node1", "/job/node1"},
		{map[string]string{jobenv.VarNodes: "a,b,c,d", jobenv.VarCacheRoot: "/job"}, 3, 4, "d", "/job/d"},
		{map[string]string{jobenv.VarNodes: "2", jobenv.VarNode: "x", jobenv.VarCache: "/c/x"}, 3, 4, "x", "/c/x"},
		{map[string]string{jobenv.VarNodes: "2", jobenv.VarSCRNodes: "3", jobenv.VarCacheRoot: "/job", "SCR_CACHE_BASE": "/b", "SCR_JOB_ID": "j"}, 2, 4, "node2", "/b/ckpt.j/node2"},
		{map[string]string{"SCR_CACHE_BASE": "/b", "SCR_JOB_ID": "j"}, 1, 4, "host", "/b/ckpt.j/host"},
	} {
		p := NewParams(envOf(tc.env))
		node, err := NodeFor(p, tc.rank, tc.size, "host")
		if err != nil || node != tc.node {
			t.Errorf("%v rank %d of %d: node %q, %v; want %q", tc.env, tc.rank, tc.size, node, err, tc.node)
			continue
		}
		if c := CacheDir(p, node); c != filepath.FromSlash(tc.cache) {
			t.Errorf("%v: cache %q, want %q", tc.env, c, tc.cache)
		}
	}
	for _, bad := range []string{"0", "5", "a/b,c"} {
		_, err := NodeFor(NewParams(envOf(map[string]string{jobenv.VarNodes: bad})), 0, 4, "host")
		if err == nil || !strings.Contains(err.Error(), jobenv.VarNodes) {
			t.Errorf("%s=%s: %v, want an error naming it", jobenv.VarNodes, bad, err)
		}
	}
}
