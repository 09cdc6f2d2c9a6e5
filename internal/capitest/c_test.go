package capitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/capitest/mpitest"
	"github.com/ckpt/ckpt/internal/testwait"
)

// The tests below drive testdata/scrapi.c, whose commands (its usage())
// each make one SCR sequence and check every byte and return value; a
// run fails on the first wrong one. Flags: 1 checkpoint, 2 output.

// N checkpoints, then a restart from the newest; the dataset ids go on
// from there, and a second restart takes the newest of those.
func TestRestartFromNewest(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil, "version", "restart", "none", "write", "1", "3", "1")
		out := j.run(nil, "restart", "ckpt.3", "write", "4", "5", "1")
		if !strings.Contains(out, "restarted from ckpt.3\n") {
			t.Errorf("the restart does not say where from:\n%s", out)
		}
		j.run(nil, "restart", "ckpt.5")
	})
}

// A byte of the newest checkpoint corrupted in a node's cache: the
// application must never read it. With four ranks on four nodes the
// XOR set rebuilds the file and the newest is restored; with one rank
// there is no redundancy (and no flush: SCR_FLUSH=0), so the restart goes
// to the checkpoint before (by ckpt's verification, or, should the
// library hand over the bad byte, by the program's SCR_Complete_restart(0)
// path, which "tolerate" allows).
func TestCorruptNewestInCache(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.setenv("SCR_FLUSH=0", "SCR_COPY_TYPE=XOR")
		j.run(nil, "write", "1", "3", "1")
		files := cachedFiles(t, j.cache, "ckpt.3/rank_0.ckpt")
		if len(files) == 0 {
			t.Fatalf("no cached copy of ckpt.3/rank_0.ckpt under %s:%s", j.cache, listing(j.cache))
		}
		for _, f := range files {
			corruptByte(t, f, recordHeader+100)
		}
		want := "ckpt.3"
		if np == 1 {
			want = "ckpt.2"
		}
		j.run(nil, "tolerate", "restart", want)
	})
}

func corruptByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// One rank votes the newest checkpoint invalid: SCR_Complete_restart
// fails on every rank, the next SCR_Have_restart offers the one before,
// and a later run is never offered the failed one again.
func TestCompleteRestartInvalidOffersTheOneBefore(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil, "write", "1", "3", "1")
		j.run(nil, "reject", "ckpt.3", "restart", "ckpt.2")
		j.run(nil, "restart", "ckpt.2")
	})
}

// A node's cache lost between runs (four ranks on four nodes, one XOR
// set, no flush): its rank's file is rebuilt from the XOR parity onto
// the node, and the newest checkpoint restored.
func TestNodeLostRebuiltFromXOR(t *testing.T) {
	j := newJob(t, 4, "scrapi.c")
	j.setenv("SCR_FLUSH=0", "SCR_COPY_TYPE=XOR", "SCR_SET_SIZE=4")
	j.run(nil, "write", "1", "2", "1")
	if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.2")); err == nil {
		t.Fatalf("ckpt.2 reached the prefix with SCR_FLUSH=0: a restart need not rebuild anything")
	}
	j.loseNode(1)
	j.run(nil, "restart", "ckpt.2")
	rebuilt := cachedFiles(t, j.nodeCache(1), "ckpt.2/rank_1.ckpt")
	if len(rebuilt) == 0 {
		t.Fatalf("rank 1's file of ckpt.2 is not back in node1's cache:%s", listing(j.nodeCache(1)))
	}
	checkRecords(t, rebuilt[0], 2, 1)
}

// Two nodes of one XOR set lost: the set cannot rebuild, so the newest
// checkpoint is fetched from the prefix (SCR_FLUSH=1: every checkpoint is
// flushed), where its files also lie at their original paths. Without a
// flush nothing is left to restart from.
func TestTwoNodesLostFetchedFromPrefix(t *testing.T) {
	for _, c := range []struct{ flush, want string }{{"1", "ckpt.2"}, {"0", "none"}} {
		t.Run("SCR_FLUSH="+c.flush, func(t *testing.T) {
			j := newJob(t, 4, "scrapi.c")
			j.setenv("SCR_FLUSH="+c.flush, "SCR_COPY_TYPE=XOR", "SCR_SET_SIZE=4")
			j.run(nil, "write", "1", "2", "1")
			if c.flush == "1" {
				j.checkPrefixFiles(1)
				j.checkPrefixFiles(2)
			}
			j.loseNode(1)
			j.loseNode(2)
			j.run(nil, "restart", c.want)
		})
	}
}

// One rank's only node lost: the checkpoint comes back from the prefix.
func TestOneRankNodeLostFetchedFromPrefix(t *testing.T) {
	j := newJob(t, 1, "scrapi.c")
	j.setenv("SCR_FLUSH=1")
	j.run(nil, "write", "1", "2", "1")
	j.loseNode(0)
	j.run(nil, "restart", "ckpt.2")
}

// SCR_Current picks the checkpoint to restart from before
// SCR_Have_restart; SCR_CURRENT does the same from the environment, here
// for one the caches no longer hold (they keep the newest two), which
// comes back from the prefix (SCR_FLUSH=1).
func TestCurrent(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil, "write", "1", "3", "1")
		j.run(nil, "current", "ckpt.2", "restart", "ckpt.2")
	})
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.setenv("SCR_FLUSH=1")
		j.run(nil, "write", "1", "3", "1")
		if files := cachedFiles(t, j.cache, "ckpt.1/rank_0.ckpt"); len(files) > 0 {
			t.Logf("the caches still hold ckpt.1: the restart need not fetch it (%v)", files)
		}
		j.run([]string{"SCR_CURRENT=ckpt.1"}, "restart", "ckpt.1")
	})
}

// SCR_Drop forgets a checkpoint and keeps its files; SCR_Delete removes
// them from the prefix too, directory and all; neither comes back in a
// later run. Dropping a name nobody knows succeeds.
func TestDropAndDelete(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.setenv("SCR_FLUSH=1")
		j.run(nil, "write", "1", "3", "1")
		j.run(nil, "drop", "nosuch.7", "drop", "ckpt.3", "restart", "ckpt.2")
		j.checkPrefixFiles(3)
		j.run(nil, "delete", "ckpt.2", "restart", "ckpt.1")
		if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.2")); !os.IsNotExist(err) {
			t.Errorf("SCR_Delete(ckpt.2) left %s/ckpt.2 (%v):%s", j.prefix, err, listing(j.prefix))
		}
		if files := cachedFiles(t, j.cache, "ckpt.2/rank_0.ckpt"); len(files) > 0 {
			t.Errorf("SCR_Delete(ckpt.2) left it in the cache: %v", files)
		}
		j.checkPrefixFiles(1)
		j.run(nil, "restart", "ckpt.1")
	})
}

// SCR_Need_checkpoint's answers follow from its parameters: every N-th
// call with SCR_CHECKPOINT_INTERVAL; never within an hour of the last
// checkpoint with SECONDS=3600, and never before SECONDS have passed with
// a short one; with OVERHEAD, a first checkpoint to measure the cost,
// then at once with 100 percent, and not for a million times the cost
// with a millionth (the test's calls take far less). No parameter: no.
func TestNeedCheckpoint(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"none", nil, []string{"need", "6", "000000"}},
		{"INTERVAL=3", []string{"SCR_CHECKPOINT_INTERVAL=3"}, []string{"need", "9", "001001001"}},
		{"INTERVAL=1", []string{"SCR_CHECKPOINT_INTERVAL=1"}, []string{"need", "3", "111"}},
		{"SECONDS=3600", []string{"SCR_CHECKPOINT_SECONDS=3600"}, []string{"need", "5", "00000"}},
		{"SECONDS=2", []string{"SCR_CHECKPOINT_SECONDS=2"}, []string{"need-after", "2", "120", "2"}},
		{"OVERHEAD=100", []string{"SCR_CHECKPOINT_OVERHEAD=100"}, []string{"need", "4", "1111"}},
		{"OVERHEAD=0.0001", []string{"SCR_CHECKPOINT_OVERHEAD=0.0001"}, []string{"need", "4", "1000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forRanks(t, func(t *testing.T, np int) {
				j := newJob(t, np, "scrapi.c")
				j.run(c.env, c.args...)
			})
		})
	}
}

// A call that fails on one rank (SCR_Need_checkpoint and
// SCR_Should_exit with a NULL flag there) fails on every rank: the others
// are not left waiting for that rank's answer.
func TestNeedCheckpointFailsOnEveryRank(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		out := j.run(nil, "need-null", strconv.Itoa(np-1))
		if !strings.Contains(out, "need-null: every rank failed") {
			t.Fatalf("no word from rank 0:\n%s", out)
		}
	})
}

// SCR_HALT_SECONDS: SCR_Should_exit says yes once the job's end
// (CKPT_SCR_END_TIME) is nearer than that, and SCR_Need_checkpoint then
// says yes too, so that the last state is saved; an end farther away
// than SCR_HALT_SECONDS, or no end, says no.
func TestShouldExitHaltSeconds(t *testing.T) {
	end := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run([]string{"CKPT_SCR_END_TIME=" + end, "SCR_HALT_SECONDS=7200"}, "should-exit", "1", "need", "1", "1")
		j.run([]string{"CKPT_SCR_END_TIME=" + end, "SCR_HALT_SECONDS=60"}, "should-exit", "0", "need", "1", "0")
		j.run([]string{"SCR_HALT_SECONDS=60"}, "should-exit", "0")
		j.run(nil, "should-exit", "0")
	})
}

// `ckpt halt` on an SCR application run by `ckpt run` (its ranks MPI
// singletons, ckpt's coordinator between them): the ranks'
// SCR_Need_checkpoint and SCR_Should_exit say yes soon after, the job
// takes its last checkpoint and ends.
func TestShouldExitAfterCkptHalt(t *testing.T) {
	ckpt := ckptBinary(t)
	for _, np := range []int{1, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			j := newJob(t, np, "scrapi.c")
			ready := filepath.Join(t.TempDir(), "ready")
			jobDir := filepath.Join(t.TempDir(), "job")
			done := make(chan string, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
				defer cancel()
				cmd := j.ckptRun(ctx, ckpt, jobDir, "write", "1", "1", "1", "wait-exit", ready, "60", "should-exit", "1")
				out, err := cmd.CombinedOutput()
				if err != nil {
					out = fmt.Appendf(out, "\nckpt run failed: %v", err)
				}
				done <- string(out)
			}()
			waitForFile(t, ready, done)
			halt := exec.Command(ckpt, "halt", "--cache-root", jobDir)
			if hout, err := halt.CombinedOutput(); err != nil {
				t.Errorf("ckpt halt --cache-root %s: %v\n%s", jobDir, err, hout)
			}
			out := testwait.Recv(t, done, "the job to see the halt and end")
			// Each rank is an MPI singleton under ckpt run, rank 0 of its
			// own MPI_COMM_WORLD: every one of them prints.
			if strings.Count(out, "should_exit: yes") != np || strings.Count(out, "scrapi: OK") != np || strings.Contains(out, " failed: exit") {
				t.Fatalf("the job did not see the halt and end cleanly:\n%s", out)
			}
		})
	}
}

// ckptRun is `ckpt run` of the job's program with args, its ranks on as
// many nodes, its directory jobDir.
func (j *job) ckptRun(ctx context.Context, ckpt, jobDir string, args ...string) *exec.Cmd {
	n := strconv.Itoa(j.np)
	cmd := exec.CommandContext(ctx, ckpt, append([]string{"run", "-n", n, "--nodes", n, "--cache-root", jobDir, "--keep-cache", "--", j.bin}, args...)...)
	cmd.Dir = j.prefix
	// The node caches stay after the job (--keep-cache), for the tests to
	// look at. The caches are the test's own: by default they would be the temp
	// directory's ckpt.defjobid, shared with any other job.
	cmd.Env = append(os.Environ(), "SCR_PREFIX="+j.prefix, "SCR_CACHE_BASE="+j.cache, "SCR_JOB_ID="+jobID,
		"OMPI_MCA_mpi_yield_when_idle=1")
	return cmd
}

// Under `ckpt run --nodes 2` the two ranks are on two nodes: their
// checkpoint files are cached on two nodes (in the job's directory or
// under SCR_CACHE_BASE, wherever the library keeps them), so that the
// redundancy sets span nodes and ckpt run's node failures are failures
// of the SCR caches too.
func TestCkptRunNodesAreTheCachesNodes(t *testing.T) {
	ckpt := ckptBinary(t)
	j := newJob(t, 2, "scrapi.c")
	jobDir := filepath.Join(t.TempDir(), "job")
	ctx, cancel := context.WithTimeout(context.Background(), mpitest.Timeout)
	defer cancel()
	if out, err := j.ckptRun(ctx, ckpt, jobDir, "write", "1", "1", "1").CombinedOutput(); err != nil {
		t.Fatalf("ckpt run: %v\n%s", err, out)
	}
	// Each rank is an MPI singleton under ckpt run: both write rank_0.ckpt.
	nodes := map[string]bool{}
	var files []string
	for _, root := range []string{j.cache, jobDir} {
		for _, f := range cachedFiles(t, root, "ckpt.1/rank_0.ckpt") {
			files = append(files, f)
			parts := strings.Split(filepath.ToSlash(f), "/")
			for i, p := range parts {
				if p == "ckpt.1" && i > 0 {
					nodes[parts[i-1]] = true
					break
				}
			}
		}
	}
	if len(files) != 2 || len(nodes) != 2 {
		t.Errorf("2 ranks on 2 nodes under ckpt run: their files are cached on nodes %v: %v", nodes, files)
	}
}

// Under plain mpirun there is no `ckpt run` to ask: creating
// $SCR_PREFIX/.ckpt/halt halts the job (docs/C-API.md).
func TestShouldExitHaltFile(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		ready := filepath.Join(t.TempDir(), "ready")
		done := make(chan string, 1)
		go func() {
			out, err := mpitest.Run(t, np, j.prefix, j.env, j.bin, "write", "1", "1", "1", "wait-exit", ready, "60", "should-exit", "1")
			if err != nil {
				out = fmt.Sprintf("%s\nmpirun failed: %v", out, err)
			}
			done <- out
		}()
		waitForFile(t, ready, done)
		if err := os.WriteFile(filepath.Join(j.prefix, ".ckpt", "halt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		out := testwait.Recv(t, done, "the job to see the halt and end")
		if !strings.Contains(out, "should_exit: yes") || !strings.Contains(out, "scrapi: OK") || strings.Contains(out, " failed: exit") {
			t.Fatalf("the job did not see the halt:\n%s", out)
		}
	})
}

// waitForFile polls for path to exist, for at most testwait.Bound; the
// job's output arrives on done should it end first.
func waitForFile(t *testing.T, path string, done <-chan string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testwait.Bound)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case out := <-done:
			t.Fatalf("the job ended before it created %s:\n%s", path, out)
		case <-deadline:
			t.Fatalf("waited %v for %s", testwait.Bound, path)
		case <-tick.C:
		}
	}
}

// Datasets flagged OUTPUT land at their paths under the prefix, with
// directories of any depth; one flagged CHECKPOINT and OUTPUT too, and
// it can be restarted from.
func TestOutputAtItsPathsUnderThePrefix(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil,
			"output", "out.7", "2", "results/deep/out.7/data_%r.bin", "7",
			"output", "both.8", "3", "both.8/rank_%r.ckpt", "8")
		for r := 0; r < np; r++ {
			checkRecords(t, filepath.Join(j.prefix, fmt.Sprintf("results/deep/out.7/data_%d.bin", r)), 7, uint32(r))
			checkRecords(t, filepath.Join(j.prefix, fmt.Sprintf("both.8/rank_%d.ckpt", r)), 8, uint32(r))
		}
		// An output-only dataset is never a restart; the other one is.
		j.run(nil, "restart", "both.8")
	})
}

// Several ranks route one file and each writes its part, with the cache
// bypassed as SCR's test_api --shared-file does (SCR_Config
// "SCR_CACHE_BYPASS=1"): the file at the prefix holds every part, and a
// restart reads each rank's part back.
func TestSharedFile(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil, "config:SCR_CACHE_BYPASS=1", "shared", "shared.4", "3", "data.bin")
		var ranks []uint32
		for r := 0; r < np; r++ {
			ranks = append(ranks, uint32(r))
		}
		checkRecords(t, filepath.Join(j.prefix, "shared.4/data.bin"), 4, ranks...)
		j.run(nil, "config:SCR_CACHE_BYPASS=1", "restart-shared", "shared.4", "data.bin")
	})
}

// After a restart from an older checkpoint an application computes the
// same steps again and writes datasets of the names it wrote before: an
// output of the step after the checkpoint (SCR's test_api -o does this),
// and checkpoints newer than the one restored, after SCR_Current or
// after SCR_Complete_restart(0) sent it back. The new ones replace the
// old ones (their files at the prefix hold the new bytes), and a later
// restart takes the newest.
func TestNamesWrittenAgainAfterRestart(t *testing.T) {
	t.Run("output after a restart", func(t *testing.T) {
		forRanks(t, func(t *testing.T, np int) {
			j := newJob(t, np, "scrapi.c")
			j.run(nil, "write", "5", "5", "1", "output", "out.6", "2", "out.6/rank_%r", "6")
			j.run(nil, "restart", "ckpt.5", "output", "out.6", "2", "out.6/rank_%r", "16")
			for r := 0; r < np; r++ {
				checkRecords(t, filepath.Join(j.prefix, fmt.Sprintf("out.6/rank_%d", r)), 16, uint32(r))
			}
		})
	})
	// The restart goes back to ckpt.2, then ckpt.3 and ckpt.4 are written again.
	for name, back := range map[string][]string{
		"checkpoint after SCR_Current":             {"current", "ckpt.2", "restart", "ckpt.2"},
		"checkpoint after SCR_Complete_restart(0)": {"reject", "ckpt.3", "restart", "ckpt.2"},
	} {
		t.Run(name, func(t *testing.T) {
			forRanks(t, func(t *testing.T, np int) {
				j := newJob(t, np, "scrapi.c")
				j.run(nil, "write", "1", "3", "1")
				j.run(nil, append(back, "write", "3", "4", "1")...)
				j.run(nil, "restart", "ckpt.4")
			})
		})
	}
}

// SCR_ENABLE=0: SCR_Init fails, every later call fails, and nothing is
// written under the prefix.
func TestDisabled(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run([]string{"SCR_ENABLE=0"}, "disabled")
		entries, err := os.ReadDir(j.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			t.Errorf("SCR_ENABLE=0 left files under the prefix:%s", listing(j.prefix))
		}
	})
}

// SCR_Config sets parameters before SCR_Init (here SCR_FLUSH=1, so the
// checkpoint reaches the prefix) and answers queries with a string the
// caller frees; the environment wins over it.
func TestConfig(t *testing.T) {
	forRanks(t, func(t *testing.T, np int) {
		j := newJob(t, np, "scrapi.c")
		j.run(nil, "config:SCR_FLUSH=1", "write", "1", "1", "1", "config", "SCR_FLUSH", "1")
		j.checkPrefixFiles(1)

		j = newJob(t, np, "scrapi.c")
		j.run([]string{"SCR_FLUSH=0"}, "config:SCR_FLUSH=1", "write", "1", "1", "1")
		if _, err := os.Stat(filepath.Join(j.prefix, "ckpt.1")); err == nil {
			t.Errorf("SCR_Config(SCR_FLUSH=1) won over SCR_FLUSH=0 in the environment: ckpt.1 reached the prefix")
		}
	})
}

// A call in the wrong state, or with a name or flags that differ across
// ranks, or a file routed outside the prefix, aborts the job with a
// message that names the call.
func TestMisuseAborts(t *testing.T) {
	cases := []struct {
		what string
		np   int
		call string
	}{
		{"complete-output-idle", 1, "SCR_Complete_output:"},
		{"complete-restart-idle", 1, "SCR_Complete_restart:"},
		{"start-restart-without-restart", 1, "SCR_Start_restart:"},
		{"start-output-twice", 1, "SCR_Start_output:"},
		{"need-in-output", 1, "SCR_Need_checkpoint:"},
		{"route-outside-prefix", 1, "SCR_Route_file:"},
		{"names-differ", 4, "SCR_Start_output:"},
		{"flags-differ", 4, "SCR_Start_output:"},
		{"current-names-differ", 4, "SCR_Current:"},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			j := newJob(t, c.np, "scrapi.c")
			out := j.runFails(nil, "misuse", c.what)
			if !strings.Contains(out, c.call) {
				t.Errorf("the abort does not name %s:\n%s", strings.TrimSuffix(c.call, ":"), out)
			}
			if strings.Contains(out, "returned instead of aborting") {
				t.Errorf("a rank went on after the misuse:\n%s", out)
			}
		})
	}
}
