package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/launch"
)

// mpirun across hosts, with a spare: a real Open MPI mpirun inside an
// allocation of the real Slurm cluster (three nodes, n1 to n3), where it
// runs its daemons on the allocation's nodes through srun, so that each
// rank runs on a Slurm node of its own name (SLURMD_NODENAME, which it
// reports as its host). The job's 2 nodes land on n1 and n2. Node1 is
// lost (on n2): its ranks go to the spare node2, whose host is the
// allocation's free node n3 (launch.External.SpareHosts), and the
// relaunch is pinned with a host file of one host per rank and Open
// MPI's sequential mapper (n1 n1 n3 n3), n2 in no line of it; the spare
// rebuilds node1's part from the XOR parity and the job ends with the
// failure-free result.
func TestRunUnderMPIRunInSlurmAllocationUsesSpareHost(t *testing.T) {
	c := slurmCluster(t)
	mpitest.RequireTools(t, "mpirun")
	inAllocation(t, c)
	// What salloc's shell, or a batch script, has beside SLURM_JOB_ID:
	// Open MPI takes the allocation's nodes and slots from these.
	for k, v := range map[string]string{"SLURM_JOBID": os.Getenv("SLURM_JOB_ID"), "SLURM_NODELIST": "n[1-3]",
		"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_TASKS_PER_NODE": "2(x3)", "SLURM_JOB_CPUS_PER_NODE": "2(x3)",
		"SLURM_JOB_NUM_NODES": "3"} {
		t.Setenv(k, v)
	}
	spec, log := jobSpec(t)
	spec.keepCache, spec.spares = true, 1
	underLauncher(t, &spec, launch.LauncherMPIRun)
	exe := spec.program
	spec.program = "/bin/sh"
	spec.args = append([]string{"-c", `echo "slurm-task inc=$CKPT_INCARNATION rank=$OMPI_COMM_WORLD_RANK node=$SLURMD_NODENAME"; exec "$0" "$@"`, exe}, spec.args...)
	res := runNodeLoss(t, spec, log)
	if t.Failed() {
		t.Logf("slurmctld.log:\n%s", c.Log("slurmctld.log"))
	}
	checkSpareRelaunch(t, res, log)
	if !strings.Contains(log.String(), "pinned: node0 on n1, node2 on n3") {
		t.Errorf("no progress line says where the relaunch pinned the nodes:\n%s", log)
	}
}
