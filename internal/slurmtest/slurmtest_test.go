package slurmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	conf := Config("/d", "vm", 7000, []int{7001, 7002}, 4)
	for _, want := range []string{
		"SlurmctldHost=vm(127.0.0.1)\n", "SlurmctldPort=7000\n", "AuthInfo=socket=/d/munge.sock\n",
		"StateSaveLocation=/d/state\n", "SlurmdSpoolDir=/d/spool/%n\n", "TmpFS=/d/tmp/%n\n", "ProctrackType=proctrack/linuxproc\n",
		"TaskPlugin=task/none\n", "AccountingStorageType=accounting_storage/none\n",
		"NodeName=n1 NodeHostname=vm NodeAddr=127.0.0.1 Port=7001 CPUs=4 ",
		"NodeName=n2 NodeHostname=vm NodeAddr=127.0.0.1 Port=7002 CPUs=4 ",
		"PartitionName=test Nodes=n1,n2 Default=YES",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "cgroup") {
		t.Errorf("slurm.conf uses cgroups:\n%s", conf)
	}
}

func TestNewRefusesAnEmptyCluster(t *testing.T) {
	if _, err := New(Options{Nodes: 0, CPUs: 1}); err == nil || !strings.Contains(err.Error(), "0 nodes") {
		t.Errorf("no nodes: %v", err)
	}
}

// A daemon that cannot start (slurmd is not a program here) makes New
// fail with what failed, and leaves nothing behind.
func TestNewFailsWithoutSlurmd(t *testing.T) {
	progs := []string{"munged", "slurmctld", "sinfo"}
	Need(t, progs...)
	bin := t.TempDir()
	for _, p := range progs {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, bin+"/"+p); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	c, err := New(Options{Nodes: 1, CPUs: 1})
	if err == nil {
		c.Close()
		t.Fatal("a cluster started without slurmd")
	}
	if !strings.Contains(err.Error(), "slurmd") {
		t.Errorf("the error does not name slurmd: %v", err)
	}
}

// The cluster runs a step of 4 tasks on two of its nodes, two tasks on
// each, and srun's --exclude keeps a step off a node.
func TestClusterRunsSteps(t *testing.T) {
	c := Start(t, Options{Nodes: 3, CPUs: 2})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	nodes := func(args ...string) []string {
		t.Helper()
		args = append(args, "sh", "-c", `echo "$SLURM_PROCID $SLURMD_NODENAME"`)
		// Only the tasks' output: srun says on stderr when a job waited
		// for its nodes (the previous one's still completing).
		cmd := c.Command(ctx, "srun", args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("srun %v: %v\n%s%s\n%s", args, err, out, stderr.String(), c.Log("slurmctld.log"))
		}
		byRank := make([]string, 4)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var r int
			var n string
			if _, err := fmt.Sscan(line, &r, &n); err != nil || r < 0 || r >= 4 {
				t.Fatalf("srun printed %q", out)
			}
			byRank[r] = n
		}
		return byRank
	}
	if got := nodes("-n", "4", "-N", "2"); !slices.Equal(got, []string{"n1", "n1", "n2", "n2"}) {
		t.Errorf("tasks on %v, want n1 n1 n2 n2", got)
	}
	if got := nodes("-n", "4", "-N", "2", "--exclude=n1"); !slices.Equal(got, []string{"n2", "n2", "n3", "n3"}) {
		t.Errorf("tasks with n1 excluded on %v, want n2 n2 n3 n3", got)
	}
}

// srun's arbitrary distribution puts task i on the i-th host of the file
// SLURM_HOSTFILE names, in any order and not in blocks, whether srun
// makes an allocation of its own or runs a step in one: what ckpt's srun
// launcher relies on to keep each of a job's nodes on its Slurm node
// across launches.
func TestClusterPinsTasks(t *testing.T) {
	c := Start(t, Options{Nodes: 3, CPUs: 2})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	run := func(env []string, hosts []string, args ...string) []string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(file, []byte(strings.Join(hosts, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(append([]string{"-n", fmt.Sprint(len(hosts)), "--distribution=arbitrary"}, args...), "sh", "-c", `echo "$SLURM_PROCID $SLURMD_NODENAME"`)
		cmd := c.Command(ctx, "srun", args...)
		cmd.Env = append(append(cmd.Env, env...), "SLURM_HOSTFILE="+file)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("srun %v on %v: %v\n%s%s\n%s", args, hosts, err, out, stderr.String(), c.Log("slurmctld.log"))
		}
		byRank := make([]string, len(hosts))
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var r int
			var n string
			if _, err := fmt.Sscan(line, &r, &n); err != nil || r < 0 || r >= len(hosts) {
				t.Fatalf("srun printed %q", out)
			}
			byRank[r] = n
		}
		return byRank
	}
	for _, hosts := range [][]string{{"n2", "n2", "n3", "n3"}, {"n3", "n3", "n2", "n2"}, {"n3", "n1", "n3", "n1"}} {
		if got := run(nil, hosts); !slices.Equal(got, hosts) {
			t.Errorf("tasks on %v, want %v", got, hosts)
		}
	}
	// In an allocation of the three nodes, as a batch script has it
	// (SLURM_NNODES=3): a step on two of them, with --nodes saying so.
	out, err := c.Command(ctx, "salloc", "--no-shell", "-N", "3", "--exclusive", "-t", "10").CombinedOutput()
	m := regexp.MustCompile(`Granted job allocation (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("salloc: %v\n%s", err, out)
	}
	defer c.Command(context.Background(), "scancel", string(m[1])).Run()
	alloc := []string{"SLURM_JOB_ID=" + string(m[1]), "SLURM_NNODES=3"}
	for _, hosts := range [][]string{{"n3", "n3", "n1", "n1"}, {"n2", "n1", "n2", "n1"}} {
		if got := run(alloc, hosts, "--nodes=2"); !slices.Equal(got, hosts) {
			t.Errorf("in an allocation: tasks on %v, want %v", got, hosts)
		}
	}
}
