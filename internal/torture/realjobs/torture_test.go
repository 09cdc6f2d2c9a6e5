package realjobs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/torture"
)

// TestTorture runs a short campaign on real jobs: ranks, launchers and
// staging servers are processes of the ckpt binary TestMain built. It stops after a
// number of faults, not a time, so that a slow machine sees the same
// faults, later; --duration only bounds it.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real jobs for a minute or more; not in -short")
	}
	code, stdout, stderr := ckpt(t, "torture", "--duration", "15m", "--faults", "8", "--seed", "1",
		"--workload", "himeno", "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("ckpt torture: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	obj := keys(t, stdout)
	for _, k := range []string{"faults_injected", "faults", "recoveries", "wrong_results", "committed_lost_within_tolerance",
		"lost_beyond_tolerance", "recover_seconds", "seed"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("the JSON has no %q: %s", k, stdout)
		}
	}
	var res torture.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.FaultsInjected != 8 || len(res.Faults) < 3 {
		t.Errorf("%d faults of %d kinds injected (%v), want 8 of at least 3\n%s", res.FaultsInjected, len(res.Faults), res.Faults, stderr)
	}
	if res.WrongResults != 0 || res.CommittedLostWithinTolerance != 0 {
		t.Errorf("wrong results %d, committed lost within tolerance %d: %q\n%s", res.WrongResults, res.CommittedLostWithinTolerance, res.Problems, stderr)
	}
	recovered := 0
	for _, n := range res.Recoveries {
		recovered += n
	}
	if recovered == 0 || res.Seed != 1 {
		t.Errorf("recoveries %v, seed %d", res.Recoveries, res.Seed)
	}
	for k := range res.Faults {
		if _, ok := res.RecoverSeconds[k]; !ok && res.Stuck == 0 {
			t.Errorf("no recovery time for %s: %v", k, res.RecoverSeconds)
		}
	}
	// One progress line per fault and per recovery.
	if n := strings.Count(stderr, "injected (newest committed"); n != 8 {
		t.Errorf("%d progress lines of injected faults, want 8:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "recovered from #") {
		t.Errorf("no progress line of a recovery:\n%s", stderr)
	}
}

// TestTortureHostile runs a short campaign of hostile faults on real jobs
// with relays (--tree): every kind of listener is attacked, each holds
// every attack it sees to its end, and the job rides the attacks out.
func TestTortureHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real jobs for about 10 s; not in -short")
	}
	code, stdout, stderr := ckpt(t, "torture", "--duration", "15m", "--faults", "2", "--seed", "3", "--kinds", "hostile",
		"--workload", "matmul", "--tree", "--heartbeat-timeout", "3s", "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("ckpt torture: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Log(stderr)
	obj := keys(t, stdout)
	for _, k := range []string{"hostile_failures", "attacks_held", "attacks_cut"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("the JSON has no %q: %s", k, stdout)
		}
	}
	var res torture.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.FaultsInjected != 2 || res.Faults[torture.Hostile] != 2 {
		t.Fatalf("faults %v, want 2 hostile\n%s", res.Faults, stderr)
	}
	if res.HostileFailures != 0 || res.WrongResults != 0 || len(res.Problems) != 0 {
		t.Errorf("hostile failures %d, wrong results %d: %q\n%s", res.HostileFailures, res.WrongResults, res.Problems, stderr)
	}
	// Every kind of listener held attacks: the coordinator, the two
	// relays, the four ranks' peer listeners, the staging server.
	for _, k := range []string{"coordinator", "relay", "peer", "stage"} {
		if res.AttacksHeld[k] == 0 {
			t.Errorf("no attack on a %s held: %v\n%s", k, res.AttacksHeld, stderr)
		}
	}
	// Ridden out: no restart, and every job ran to its end with the
	// failure-free result (checked with every checkpoint on the way).
	if len(res.Recoveries) != 0 || res.UnexpectedRestarts != 0 || res.JobFailures != 0 || res.Stuck != 0 || res.RunsFinished != res.Runs {
		t.Errorf("recoveries %v, unexpected restarts %d, job failures %d, stuck %d, runs %d finished of %d\n%s",
			res.Recoveries, res.UnexpectedRestarts, res.JobFailures, res.Stuck, res.RunsFinished, res.Runs, stderr)
	}
	// A progress line per fault counts the attacks each kind held.
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "attacks of #") {
			continue
		}
		n++
		for _, k := range []string{"coordinator ", "relay ", "peer ", "stage "} {
			if !strings.Contains(line, k) {
				t.Errorf("the progress line %q counts no attack a %s held", line, k)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d progress lines of attacks, want 2:\n%s", n, stderr)
	}
}

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
	const (
		// Seed 20's first 5 faults: cut-node, disk-full, a partition of
		// 5.4 s, shared-full, disk-full. One job each, so that every fault
		// lands early in a running job: a job that rides a full disk out
		// often finishes within the hold, and a fault after it in the same
		// job would find nothing to hit.
		seed      = 20
		faults    = 5
		heartbeat = 3 * time.Second
	)
	kinds := []torture.Kind{torture.CutNode, torture.PartitionNode, torture.DiskFull, torture.SharedFull}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	code, stdout, stderr := ckpt(t, "torture", "--duration", "15m", "--faults", fmt.Sprint(faults), "--seed", fmt.Sprint(seed),
		"--faults-per-run", "1", "--heartbeat-timeout", heartbeat.String(), "--workload", "himeno",
		"--kinds", strings.Join(names, ","), "--dir", t.TempDir(), "--json")
	if code != 0 {
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
	// A full disk fails checkpoints on every rank together
	// (ckpt.ErrCheckpointFailed): the examples go on, nothing relaunches.
	if res.JobFailures != 0 {
		t.Errorf("%d job failures: %q\n%s", res.JobFailures, res.Problems, stderr)
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
