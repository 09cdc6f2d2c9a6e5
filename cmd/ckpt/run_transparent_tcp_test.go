package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/criu"
	"github.com/ckpt/ckpt/internal/criu/criutest"
	"github.com/ckpt/ckpt/internal/jobenv"
	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/netns/netnstest"
	"github.com/ckpt/ckpt/internal/transparent"
)

// tcpCRIU skips the test, loudly, unless this CRIU can dump TCP
// connections here (criu.MinTCPVersion), or fails it under
// CKPT_REQUIRE_CRIU=1: such a CRIU is what the test needs.
func tcpCRIU(t *testing.T) {
	t.Helper()
	info, err := criu.Check(t.Context(), criutest.Path(t), criu.Exec)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version.AtLeast(criu.MinTCPVersion) {
		return
	}
	why := fmt.Sprintf("CRIU %s cannot dump TCP connections on this kernel: want %s or newer (%s=\"$(%s=sid scripts/criu.sh)\")", info.Version, criu.MinTCPVersion, criu.EnvVar, jobenv.VarCRIUSuite)
	if os.Getenv(criutest.RequireVar) == "1" {
		t.Fatalf("%s=1 and %s", criutest.RequireVar, why)
	}
	t.Skip("SKIPPED: " + why)
}

// pingpongWant is what rank r of testdata/pingpong.c prints over steps.
func pingpongWant(r, steps int) string {
	var b strings.Builder
	v := int64(7)
	for i := 1; i <= steps; i++ {
		v = (v*31 + int64(i)) % 1000003
		fmt.Fprintf(&b, "rank %d step %d %d\n", r, i, v)
	}
	fmt.Fprintf(&b, "rank %d final %d\n", r, v)
	return b.String()
}

// TestTransparentTCPAcrossNodes runs two unmodified programs on two
// nodes, each node a host of its own (a network namespace, its address
// on a bridge: ckpt run --transparent --netns), which hold one TCP
// connection for their whole run and pass a counter over it. The job is
// checkpointed while an answer waits in rank 1's socket, node 1 is lost
// with its rank and its cache, both trees are killed, and the relaunch
// rebuilds rank 1's images from XOR parity and restores both trees on
// their nodes: the connection goes on (the programs never connect again;
// a reset would end them with status 1) and each prints exactly what it
// prints without failures.
func TestTransparentTCPAcrossNodes(t *testing.T) {
	criutest.Root(t, "network namespaces and CRIU's TCP repair need root")
	tcpCRIU(t)
	netnstest.Available(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "pingpong.c")
	b, err := os.ReadFile(filepath.Join("testdata", "pingpong.c"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, b, 0o600)
	bin := filepath.Join(dir, "pingpong")
	if out, err := exec.Command("cc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v: %s", err, out)
	}
	const steps = 30
	hosts := netnstest.New(t, append(launch.NodeNames(2), coordHost)...)
	args := func(gate string) []string {
		return []string{gate, hosts.Addr(jobenv.NodeName(0)), "7300", fmt.Sprint(steps)}
	}
	spec, gate, log := transparentTestJob(t, 2, bin, args)
	if spec.args[3] != "--" {
		t.Fatalf("the ranks' arguments %q: want --dir DIR then --", spec.args)
	}
	spec.args = slices.Insert(spec.args, 3, "--tcp")
	res := launchTransparent(t, spec, log, func(c *launch.Config, coords *launch.Coordinators) {
		launch.OnHosts(c, coords, hosts, coordHost)
		injectAfter(c, coords, 1)
		c.NodeFailures = true
		openGateOnRestore(c, gate)
	})
	if res.Injected != 1 || res.Restarts["rebuild"] != 1 || len(res.Attempts) != 2 {
		t.Errorf("injected %d, restarts %v, attempts %d; want node 1 lost and one restart rebuilding it\n%s",
			res.Injected, res.Restarts, len(res.Attempts), log)
	}
	for r := range 2 {
		out, _ := rankOutputs(transparentDir(spec.cacheRoot), r)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := pingpongWant(r, steps); string(got) != want {
			t.Errorf("rank %d printed:\n%s\nwant the failure-free:\n%s\n%s", r, got, want, log)
		}
	}
	// The checkpoints hold the connection, both ends.
	var conns []string
	filepath.WalkDir(spec.cacheRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == transparent.MetaFile {
			if b, err := os.ReadFile(p); err == nil {
				if m, err := transparent.UnmarshalMeta(b); err == nil {
					for _, c := range m.Conns {
						conns = append(conns, c.String())
					}
				}
			}
		}
		return nil
	})
	if !slices.ContainsFunc(conns, func(c string) bool { return strings.HasPrefix(c, hosts.Addr(jobenv.NodeName(0))+":7300-") }) ||
		!slices.ContainsFunc(conns, func(c string) bool { return strings.HasSuffix(c, "-"+hosts.Addr(jobenv.NodeName(0))+":7300") }) {
		t.Errorf("connections in the checkpoints: %q; want both ends of the ranks' one", conns)
	}
}

// TestNetnsRefused: --netns is refused, exit status 2 before anything
// starts, without --transparent, with a CRIU that cannot dump TCP
// connections here, and with spares (a rank's connections come back only
// on its own node).
func TestNetnsRefused(t *testing.T) {
	fake := func(version string) string {
		p := filepath.Join(t.TempDir(), "criu")
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 'Version: "+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		criu string
		args []string
		want string
	}{
		{"", []string{"--netns"}, "only with --transparent"},
		{fake("4.1.1"), []string{"--transparent", "--netns"}, "CRIU 4.1.1 cannot dump TCP connections"},
		{fake("4.2.1"), []string{"--transparent", "--netns", "--nodes", "2", "--spares", "1"}, "--spares"},
	} {
		if c.criu != "" {
			t.Setenv(criu.EnvVar, c.criu)
		}
		var out, errb bytes.Buffer
		args := append(append([]string{"run", "-n", "2", "--cache-root", filepath.Join(t.TempDir(), "job")}, c.args...), "--", "/bin/true")
		if code := run(args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, errb.String(), c.want)
		}
	}
}
