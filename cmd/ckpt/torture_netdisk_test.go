package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/torture"
)

// TestTortureNetworkAndDisk runs a short campaign of the faults that need
// a sandbox (network and mount namespaces): connections cut, a node
// partitioned, a node's cache disk and the shared tier's disk full. No
// state may be wrong, no committed checkpoint lost, and a node isolated
// well past the heartbeat timeout must be detected (the job restarts).
func TestTortureNetworkAndDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real jobs for a minute; not in -short")
	}
	if why := torture.SandboxUnavailable(); why != "" {
		t.Skip("SKIPPED: the network and disk faults " + why)
	}
	t.Setenv(asCkpt, "1")
	const (
		seed      = 20 // its first 5 faults: cut-node, disk-full, a partition of 5.4 s, shared-full, disk-full
		faults    = 5
		heartbeat = 3 * time.Second
	)
	kinds := []torture.Kind{torture.CutNode, torture.PartitionNode, torture.DiskFull, torture.SharedFull}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	code, stdout, stderr := runCLI(t, "torture", "--duration", "15m", "--faults", fmt.Sprint(faults), "--seed", fmt.Sprint(seed),
		"--faults-per-run", fmt.Sprint(faults), "--heartbeat-timeout", heartbeat.String(), "--workload", "himeno",
		"--kinds", strings.Join(names, ","), "--dir", t.TempDir(), "--json")
	if code != exitOK {
		t.Fatalf("ckpt torture: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var res torture.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.WrongResults != 0 || res.CommittedLostWithinTolerance != 0 || res.LostBeyondTolerance.Count != 0 {
		t.Errorf("wrong results %d, committed lost within tolerance %d, beyond %d: %q\n%s",
			res.WrongResults, res.CommittedLostWithinTolerance, res.LostBeyondTolerance.Count, res.Problems, stderr)
	}
	if res.FaultsInjected != faults || len(res.Unavailable) != 0 {
		t.Errorf("%d faults injected, want %d; unavailable %v\n%s", res.FaultsInjected, faults, res.Unavailable, stderr)
	}
	for _, k := range kinds {
		if res.Faults[k] == 0 {
			t.Errorf("no %s injected: %v (skipped %v)\n%s", k, res.Faults, res.Skipped, stderr)
		} else if _, ok := res.RecoverSeconds[k]; !ok && res.Stuck == 0 {
			t.Errorf("no recovery time for %s: %v", k, res.RecoverSeconds)
		}
	}
	// The schedule says how long each partition lasted: one that outlasted
	// the heartbeat timeout by seconds must have been caught (a restart),
	// not ridden out as if nothing had happened.
	drawn := res.FaultsInjected
	for _, n := range res.Skipped {
		drawn += n
	}
	s := torture.NewSchedule(seed, kinds)
	for range drawn {
		f := s.Next(torture.Topology{Ranks: 4, Nodes: 2, StagingServers: 1})
		if f.Kind != torture.PartitionNode || f.Hold < heartbeat+2*time.Second || !strings.Contains(stderr, "fault "+f.String()+" injected") {
			continue
		}
		if strings.Contains(stderr, "rode out "+f.String()+":") {
			t.Errorf("%s isolated node %d for %s, past the heartbeat timeout of %s, and the job rode it out: it was not detected\n%s",
				f, f.Target, f.Hold, heartbeat, stderr)
		}
	}
}

// Where no sandbox can be made, --kinds all leaves the network and disk
// faults out, saying so; naming one is an error that says what is missing.
func TestTortureWithoutSandbox(t *testing.T) {
	none := func() string { return "needs root" }
	all, _ := torture.ParseKinds("all")
	kinds, unavailable, err := withSandbox(all, false, none)
	if err != nil || len(kinds) != len(all)-4 || len(unavailable) != 4 || unavailable[torture.DiskFull] != "needs root" {
		t.Fatalf("all without a sandbox: %v, %v, %v", kinds, unavailable, err)
	}
	for _, k := range kinds {
		if k.NeedsSandbox() {
			t.Fatalf("%s kept without a sandbox", k)
		}
	}
	_, _, err = withSandbox([]torture.Kind{torture.KillRank, torture.CutNode}, true, none)
	if err == nil || !strings.Contains(err.Error(), "cut-node") || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("cut-node named without a sandbox: %v", err)
	}
	// No sandbox kind selected: the machine is not even asked.
	asked := false
	kinds, unavailable, err = withSandbox([]torture.Kind{torture.KillRank}, true, func() string { asked = true; return "no" })
	if err != nil || len(kinds) != 1 || unavailable != nil || asked {
		t.Fatalf("kill-rank alone: %v, %v, %v (asked %v)", kinds, unavailable, err, asked)
	}
	// A sandbox: nothing is left out.
	kinds, unavailable, err = withSandbox(all, false, func() string { return "" })
	if err != nil || len(kinds) != len(all) || len(unavailable) != 0 {
		t.Fatalf("all with a sandbox: %v, %v, %v", kinds, unavailable, err)
	}
}
