package launch

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// fitsSets is Job.Fits of a scheme with sets of size members.
func fitsSets(size int) func([]string) error {
	return func(layout []string) error { return formSets(layout, size) }
}

func wantLayout(t *testing.T, p *Pool, want ...string) {
	t.Helper()
	if got := p.Layout(); !slices.Equal(got, want) {
		t.Fatalf("layout %v, want %v", got, want)
	}
}

// Step by step: a spare takes a failed node's ranks; with none left the
// job shrinks while its sets still fit; then the node is kept; an
// excluded node comes back as a spare after its launches without it.
func TestPoolSparesShrinkKeepReadmit(t *testing.T) {
	p := NewPool(4, NodeNames(4), []string{"node4"}, fitsSets(2), 2)
	wantLayout(t, p, "node0", "node1", "node2", "node3")

	c := p.Fail("node1", "lost in launch 0", 0)
	if !c.Excluded() || c.Spare != "node4" || c.Shrunk {
		t.Fatalf("first failure: %+v, want node4 to take node1's ranks", c)
	}
	wantLayout(t, p, "node0", "node4", "node2", "node3")
	if len(p.Spares()) != 0 {
		t.Fatalf("spares %v after the only one was used", p.Spares())
	}

	// No spare: node0's rank goes to the least loaded node (the first of
	// the three with one rank each).
	c = p.Fail("node0", "lost in launch 1", 1)
	if !c.Excluded() || !c.Shrunk || c.Nodes != 3 {
		t.Fatalf("second failure: %+v, want a shrink to 3 nodes", c)
	}
	wantLayout(t, p, "node4", "node4", "node2", "node3")
	if !strings.Contains(c.String(), "no spare left") {
		t.Errorf("the change says %q", c)
	}

	// Two nodes would put ranks {0,1} and {2,3}: sets of 2 still fit.
	c = p.Fail("node4", "lost in launch 2", 2)
	if !c.Shrunk || c.Nodes != 2 {
		t.Fatalf("third failure: %+v, want a shrink to 2 nodes", c)
	}
	wantLayout(t, p, "node2", "node3", "node2", "node3")

	// One node cannot hold sets of 2: kept, with why.
	c = p.Fail("node3", "lost in launch 3", 3)
	if c.Excluded() || !strings.Contains(c.Kept, "cannot hold") {
		t.Fatalf("fourth failure: %+v, want the node kept", c)
	}
	wantLayout(t, p, "node2", "node3", "node2", "node3")

	ex := p.Excluded()
	if len(ex) != 3 || ex[0].Node != "node1" || ex[0].Launch != 1 || ex[2].Node != "node4" || ex[2].Launch != 3 {
		t.Fatalf("excluded %+v", ex)
	}
	// Re-admission after 2 launches without: node1 and node0 were out
	// since launches 1 and 2; count launches 4 and 5.
	if back := p.Launched(); len(back) != 0 {
		t.Fatalf("re-admitted %v after one launch", back)
	}
	back := p.Launched()
	if !slices.Equal(back, []string{"node1", "node0", "node4"}) {
		t.Fatalf("re-admitted %v, want node1, node0, node4 after two launches each", back)
	}
	if !slices.Equal(p.Spares(), back) {
		t.Fatalf("spares %v, want the re-admitted nodes", p.Spares())
	}
	if ex := p.Excluded(); !ex[0].Readmitted || !ex[2].Readmitted {
		t.Fatalf("excluded %+v: not marked re-admitted", ex)
	}
	// The next failure uses the first of them.
	if c := p.Fail("node2", "lost in launch 5", 5); c.Spare != "node1" {
		t.Fatalf("after re-admission: %+v, want node1 as the spare", c)
	}
	wantLayout(t, p, "node1", "node3", "node1", "node3")
}

// Without ReadmitAfter nothing comes back; a node not in the launch is
// not excluded; the default scheme (no fits) shrinks down to one node.
func TestPoolNoReadmitAndEdges(t *testing.T) {
	p := NewPool(6, NodeNames(3), nil, nil, 0)
	wantLayout(t, p, "node0", "node0", "node1", "node1", "node2", "node2")
	if c := p.Fail("node9", "?", 0); c.Excluded() {
		t.Fatalf("a node not in the launch was excluded: %+v", c)
	}
	p.Fail("node0", "lost", 0)
	wantLayout(t, p, "node1", "node2", "node1", "node1", "node2", "node2")
	p.Fail("node2", "lost", 1)
	wantLayout(t, p, "node1", "node1", "node1", "node1", "node1", "node1")
	if c := p.Fail("node1", "lost", 2); c.Excluded() || !strings.Contains(c.Kept, "no other node") {
		t.Fatalf("the last node: %+v, want it kept", c)
	}
	for range 5 {
		if back := p.Launched(); back != nil {
			t.Fatalf("re-admitted %v without ReadmitAfter", back)
		}
	}
}

// A shrink the redundancy sets do not fit is refused with the placement's
// reason.
func TestPoolShrinkRefused(t *testing.T) {
	p := NewPool(8, NodeNames(4), nil, fitsSets(4), 0)
	c := p.Fail("node2", "lost", 0)
	if c.Excluded() || !strings.Contains(c.Kept, "3 nodes cannot hold") || !strings.Contains(c.Kept, "sets of 4") {
		t.Fatalf("%+v: want node2 kept, xor:4 needs 4 nodes", c)
	}
	wantLayout(t, p, NewPool(8, NodeNames(4), nil, nil, 0).Layout()...)
}

func TestCompactNodes(t *testing.T) {
	for _, tc := range []struct{ layout, want []string }{
		{[]string{"a", "a", "b", "b"}, []string{"a", "b"}},
		{[]string{"a", "e", "c", "d"}, []string{"a", "e", "c", "d"}},
		{[]string{"b", "b", "a", "b"}, []string{"b", "b", "a", "b"}}, // not blocks: one per rank
		{[]string{"c", "d", "c", "d"}, []string{"c", "d", "c", "d"}},
	} {
		if got := compactNodes(tc.layout); !slices.Equal(got, tc.want) {
			t.Errorf("compactNodes(%v) = %v, want %v", tc.layout, got, tc.want)
		}
	}
}

// On one machine the host of a failed simulated node also runs the
// others: it stays. On a cluster a failed node's host goes.
func TestExcludeHosts(t *testing.T) {
	layout := []string{"n0", "n0", "n1", "n1"}
	if got := ExcludeHosts(layout, []string{"h", "h", "h", "h"}, []string{"n1"}); len(got) != 0 {
		t.Errorf("one host: excluded %v", got)
	}
	if got := ExcludeHosts(layout, []string{"h0", "h0", "h1", "h1"}, []string{"n1"}); !slices.Equal(got, []string{"h1"}) {
		t.Errorf("two hosts: excluded %v, want h1", got)
	}
	if got := ExcludeHosts(layout, []string{"h0", "", "", ""}, []string{"n1"}); len(got) != 0 {
		t.Errorf("unknown hosts: excluded %v", got)
	}
	var h hostList
	if p := h.plan(layout, nil); p.Use != nil || p.Exclude != nil || p.Pin != nil || p.Unpinned != "" {
		t.Errorf("no host known yet: %+v", p)
	}
	h.add(layout, []string{"h0", "h0", "h1", "h1"}, nil)
	if p := h.plan(layout, nil); p.Use != nil || p.Exclude != nil {
		t.Errorf("nothing excluded yet: %+v", p)
	}
	h.add(layout, []string{"h0", "h0", "h1", "h1"}, []string{"n1"})
	if p := h.plan([]string{"n0", "n0", "n0", "n0"}, nil); !slices.Equal(p.Use, []string{"h0"}) || !slices.Equal(p.Exclude, []string{"h1"}) {
		t.Errorf("after n1 on h1 failed: %+v", p)
	}
}

// Each node goes back to the host it ran on, launch after launch; a
// spare taking a failed node's ranks goes to a free host, never to one
// left out, step by step as Run drives it (Pool, then hostList).
func TestHostListPinsNodes(t *testing.T) {
	spares := func(hosts ...string) func() ([]string, error) {
		return func() ([]string, error) { return hosts, nil }
	}
	pool := NewPool(6, NodeNames(3), NodeNames(5)[3:], func([]string) error { return errors.New("the sets need 3 nodes") }, 0)
	var h hostList
	// The first launch: the launcher's choice.
	if p := h.plan(pool.Layout(), spares("s1", "s2", "s3", "s4", "s5")); p.Pin != nil || p.Unpinned != "" {
		t.Fatalf("first launch: %+v", p)
	}
	// It put node0 on s2, node1 on s1 and node2 on s3; a rank crashed,
	// no node lost: the relaunch puts each back.
	h.add(pool.Layout(), []string{"s2", "s2", "s1", "s1", "s3", ""}, nil)
	asked := 0
	ask := func() ([]string, error) { asked++; return []string{"s1", "s2", "s3", "s4", "s5"}, nil }
	p := h.plan(pool.Layout(), ask)
	if want := []string{"s2", "s2", "s1", "s1", "s3", "s3"}; !slices.Equal(p.Pin, want) || asked != 0 {
		t.Fatalf("relaunch: pinned %v (asked the launcher %d times), want %v", p.Pin, asked, want)
	}
	// node0 (on s2) lost: its ranks go to the spare node3, which gets
	// the first free host, s4 (s1 and s3 held, s2 left out).
	layout := pool.Layout()
	pool.Fail("node0", "lost", 1)
	h.add(layout, p.Pin, []string{"node0"})
	p = h.plan(pool.Layout(), ask)
	if want := []string{"s4", "s4", "s1", "s1", "s3", "s3"}; !slices.Equal(p.Pin, want) || asked != 1 {
		t.Fatalf("after node0's loss: pinned %v (asked %d times), want %v", p.Pin, asked, want)
	}
	if !slices.Equal(p.Exclude, []string{"s2"}) {
		t.Errorf("excluded hosts %v, want s2", p.Exclude)
	}
	// The spare's ranks never said where they ran (they died first): it
	// keeps the host it was given. Then node2 (s3) lost: node4 on s5.
	layout = pool.Layout()
	h.add(layout, []string{"", "", "s1", "s1", "s3", "s3"}, nil)
	pool.Fail("node2", "lost", 2)
	h.add(layout, []string{"", "", "s1", "s1", "s3", "s3"}, []string{"node2"})
	p = h.plan(pool.Layout(), ask)
	if want := []string{"s4", "s4", "s1", "s1", "s5", "s5"}; !slices.Equal(p.Pin, want) {
		t.Fatalf("after node2's loss: pinned %v, want %v", p.Pin, want)
	}
	// node1 lost with no spare left and no free host: node1 is kept
	// (Pool), on its own host, which is not left out.
	layout = pool.Layout()
	if ch := pool.Fail("node1", "lost", 3); ch.Excluded() {
		t.Fatalf("node1 excluded: %v", ch)
	}
	h.add(layout, p.Pin, nil)
	if p = h.plan(pool.Layout(), ask); !slices.Equal(p.Pin, []string{"s4", "s4", "s1", "s1", "s5", "s5"}) {
		t.Errorf("node1 kept: pinned %v", p.Pin)
	}
}

// On one machine every node shares the host, which is never left out: a
// spare goes to it too (the failed node's), whatever the launcher says,
// even that it cannot tell its hosts.
func TestHostListOneHost(t *testing.T) {
	pool := NewPool(4, NodeNames(2), NodeNames(3)[2:], nil, 0)
	var h hostList
	layout := pool.Layout()
	pool.Fail("node1", "lost", 0)
	h.add(layout, []string{"vm", "vm", "vm", "vm"}, []string{"node1"})
	for _, spare := range []func() ([]string, error){nil, func() ([]string, error) { return nil, errors.New("sinfo: no cluster") }} {
		p := h.plan(pool.Layout(), spare)
		if !slices.Equal(p.Pin, []string{"vm", "vm", "vm", "vm"}) || p.Exclude != nil || p.Unpinned != "" {
			t.Errorf("one host: %+v", p)
		}
	}
}

// Without a free host, or when the launcher cannot say which it has, the
// launch is not pinned, and the plan says why; it still leaves the
// failed node's host out.
func TestHostListNoFreeHost(t *testing.T) {
	for _, tc := range []struct {
		spare func() ([]string, error)
		why   string
	}{
		{nil, "no host is free"},
		{func() ([]string, error) { return []string{"h0", "h1"}, nil }, "no host is free"},
		{func() ([]string, error) { return nil, errors.New("sinfo: not found") }, "sinfo: not found"},
	} {
		pool := NewPool(4, NodeNames(2), NodeNames(3)[2:], nil, 0)
		var h hostList
		layout := pool.Layout()
		pool.Fail("node1", "lost", 0)
		h.add(layout, []string{"h0", "h0", "h1", "h1"}, []string{"node1"})
		p := h.plan(pool.Layout(), tc.spare)
		if p.Pin != nil || !strings.Contains(p.Unpinned, "node node2 has no host") || !strings.Contains(p.Unpinned, tc.why) {
			t.Errorf("pinned %v, unpinned %q; want not pinned: %s", p.Pin, p.Unpinned, tc.why)
		}
		if !slices.Equal(p.Use, []string{"h0"}) || !slices.Equal(p.Exclude, []string{"h1"}) {
			t.Errorf("not pinned: use %v exclude %v, want h0 and not h1", p.Use, p.Exclude)
		}
	}
}

// A pinned launch's progress line says where each node runs; a launch
// that could not be pinned says why; the first launch and Local say
// nothing.
func TestPinEvent(t *testing.T) {
	srun := &External{Kind: LauncherSrun}
	layout := []string{"node2", "node2", "node1", "node1"}
	ev, ok := pinEvent(srun, layout, hostPlan{Pin: []string{"n3", "n3", "n2", "n2"}})
	if !ok || ev.Kind != "pin" || ev.Reason != "pinned: node2 on n3, node1 on n2" {
		t.Errorf("pinned: %+v %v", ev, ok)
	}
	if ev, ok := pinEvent(srun, layout, hostPlan{Unpinned: "why"}); !ok || ev.Reason != "not pinned: why" {
		t.Errorf("not pinned: %+v %v", ev, ok)
	}
	if _, ok := pinEvent(srun, layout, hostPlan{}); ok {
		t.Error("an event for the first launch")
	}
	if _, ok := pinEvent(Local{}, layout, hostPlan{Pin: []string{"h", "h", "h", "h"}}); ok {
		t.Error("an event for Local")
	}
}

func TestSummary(t *testing.T) {
	s := Summary([]Attempt{
		{Incarnation: 0, Nodes: []string{"node0", "node1"}, Failure: "x (seen as: y)", Cause: "injected failure: node 1 lost with its cache"},
		{Incarnation: 1, Nodes: []string{"node0", "node2"}, Failure: "rank 0: exit 1"},
	}, []Exclusion{{Node: "node1", Reason: "lost in launch 0", Launch: 1, Readmitted: true}})
	for _, want := range []string{"launch 0 on node0,node1: injected failure: node 1 lost", "launch 1 on node0,node2: rank 0: exit 1",
		"excluded: node1 (lost in launch 0, from launch 1, re-admitted)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
}

func TestNewTimeLimit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	tl, err := NewTimeLimit(now, time.Hour, time.Time{}, "", 0)
	if err != nil || !tl.Deadline.Equal(now.Add(time.Hour)) || tl.Margin != DefaultHaltMargin || tl.From != "--time-limit" {
		t.Fatalf("--time-limit 1h: %+v, %v", tl, err)
	}
	// The allocation ends first: its end wins; a short time left gets a
	// quarter of it as the margin.
	end := now.Add(40 * time.Second)
	tl, err = NewTimeLimit(now, time.Hour, end, "SLURM_JOB_END_TIME", 0)
	if err != nil || !tl.Deadline.Equal(end) || tl.Margin != 10*time.Second || tl.From != "SLURM_JOB_END_TIME" {
		t.Fatalf("an earlier end: %+v, %v", tl, err)
	}
	if !tl.HaltAt().Equal(now.Add(30 * time.Second)) {
		t.Errorf("halt at %v", tl.HaltAt())
	}
	tl, err = NewTimeLimit(now, 0, time.Time{}, "", 5*time.Second)
	if err != nil || !tl.Deadline.IsZero() {
		t.Fatalf("no limit: %+v, %v", tl, err)
	}
	if _, err := NewTimeLimit(now, 10*time.Second, time.Time{}, "", 20*time.Second); err == nil || !strings.Contains(err.Error(), "halt margin") {
		t.Fatalf("a margin past the limit: %v", err)
	}
	if _, err := NewTimeLimit(now, 0, now.Add(-time.Minute), "squeue", 0); err == nil {
		t.Fatalf("an end in the past: no error")
	}
}

// A launcher that fails before any rank joined is a configuration error;
// after ranks joined (or with a failure injected) it is not.
func TestClassifyLauncherBeforeJoin(t *testing.T) {
	exit := RankExit{Rank: -1, Launcher: "srun", Status: 2, Last: "srun: unrecognized option '--bogus'"}
	v := Classify(Seen{Exits: []RankExit{exit}, JoinsKnown: true})
	if v.Class != ClassConfig || v.Relaunch || !strings.Contains(v.Why, "srun failed before any rank joined") || !strings.Contains(v.Cause, "--bogus") {
		t.Fatalf("%+v", v)
	}
	if v := Classify(Seen{Exits: []RankExit{exit}, JoinsKnown: true, Joined: 2}); v.Class == ClassConfig {
		t.Fatalf("ranks had joined: %+v", v)
	}
	if v := Classify(Seen{Exits: []RankExit{exit}}); v.Class == ClassConfig {
		t.Fatalf("joins unknown: %+v", v)
	}
	// mpirun passing on its ranks' ExitJobFailed: they reached the
	// coordinator after the join timeout had aborted the launch (a loaded
	// machine); a join timeout, not a bad command line.
	late := RankExit{Rank: -1, Launcher: "mpirun", Status: ExitJobFailed, Last: "Exit code:    75"}
	if v := Classify(Seen{Exits: []RankExit{late}, JoinsKnown: true, Symptom: "ranks [0-3] did not join within the join timeout"}); v.Class != ClassFailure || !v.Relaunch {
		t.Fatalf("ranks told the job failed, none joined: %+v", v)
	}
}

func TestPlacement(t *testing.T) {
	srun := &External{Kind: LauncherSrun}
	p, err := srun.Placement(4, []string{"a"}, []string{"b", "c"}, nil)
	if err != nil || p.File != "" || p.Pinned || !slices.Equal(p.Args, []string{"--exclude=b,c"}) {
		t.Fatalf("srun: %+v %v", p, err)
	}
	if p, _ := srun.Placement(4, nil, nil, nil); p.Args != nil || p.File != "" {
		t.Fatalf("nothing excluded: %+v", p)
	}
	for _, tc := range []struct{ flavor, flag, line string }{{OpenMPI, "--hostfile", "a slots=2\n"}, {Hydra, "-f", "a:2\n"}} {
		m := &External{Kind: LauncherMPIRun, Flavor: tc.flavor}
		p, err := m.Placement(4, []string{"a", "c"}, []string{"b"}, nil)
		if err != nil || len(p.Args) != 2 || p.Args[0] != tc.flag || p.Args[1] != p.File || p.Pinned {
			t.Fatalf("%s: %+v %v", tc.flavor, p, err)
		}
		b, err := readAndRemove(p.File)
		if err != nil || !strings.HasPrefix(string(b), tc.line) {
			t.Errorf("%s: host file %q, %v", tc.flavor, b, err)
		}
		cmd := m.command(4, 0, nil, p, "prog", nil)
		if i := slices.Index(cmd, tc.flag); i < 0 || cmd[len(cmd)-1] != "prog" || i > slices.Index(cmd, "prog") {
			t.Errorf("%s: command %v", tc.flavor, cmd)
		}
	}
	m := &External{Kind: LauncherMPIRun, Flavor: OpenMPI}
	if _, err := m.Placement(4, nil, []string{"b"}, nil); err == nil || !strings.Contains(err.Error(), "none left") {
		t.Fatalf("no host left: %v", err)
	}
}

// Pinned, every launcher gets each rank's host: srun a host per task in
// SLURM_HOSTFILE and --distribution=arbitrary, with --nodes their number
// and no block distribution nor --exclude; Open MPI a host per rank and
// its sequential mapper; Hydra a host file of consecutive ranks, or,
// where a host's ranks are not consecutive, the unpinned host file and a
// note saying why.
func TestPlacementPinned(t *testing.T) {
	pin := []string{"n3", "n3", "n2", "n2"}
	srun := &External{Kind: LauncherSrun, Args: []string{"--mpi=pmix"}}
	p, err := srun.Placement(4, []string{"n1"}, []string{"n1"}, pin)
	if err != nil || !p.Pinned || p.Hosts != 2 || p.Note != "" {
		t.Fatalf("srun: %+v %v", p, err)
	}
	if !slices.Equal(p.Env, []string{"SLURM_HOSTFILE=" + p.File}) {
		t.Errorf("srun's environment %v, want SLURM_HOSTFILE=%s", p.Env, p.File)
	}
	b, err := readAndRemove(p.File)
	if err != nil || string(b) != "n3\nn3\nn2\nn2\n" {
		t.Errorf("srun's host file %q, %v", b, err)
	}
	want := "-n 4 --kill-on-bad-exit=1 --export=ALL,CKPT_COORD --nodes=2 --distribution=arbitrary --mpi=pmix prog a"
	if got := strings.Join(srun.command(4, 2, []string{"CKPT_COORD"}, p, "prog", []string{"a"}), " "); got != want {
		t.Errorf("srun pinned:\n%s\nwant\n%s", got, want)
	}

	ompi := &External{Kind: LauncherMPIRun, Flavor: OpenMPI, Root: true}
	p, err = ompi.Placement(4, nil, nil, []string{"h1", "h0", "h1", "h0"})
	if err != nil || !p.Pinned || p.Env != nil {
		t.Fatalf("Open MPI: %+v %v", p, err)
	}
	b, err = readAndRemove(p.File)
	if err != nil || string(b) != "h1\nh0\nh1\nh0\n" {
		t.Errorf("Open MPI's host file %q, %v", b, err)
	}
	want = "-np 4 --oversubscribe --allow-run-as-root --hostfile " + p.File + " --map-by seq prog"
	if got := strings.Join(ompi.command(4, 2, nil, p, "prog", nil), " "); got != want {
		t.Errorf("Open MPI pinned:\n%s\nwant\n%s", got, want)
	}

	hydra := &External{Kind: LauncherMPIRun, Flavor: Hydra}
	p, err = hydra.Placement(5, nil, nil, []string{"h2", "h2", "h0", "h0", "h0"})
	if err != nil || !p.Pinned || !slices.Equal(p.Args, []string{"-f", p.File}) {
		t.Fatalf("Hydra: %+v %v", p, err)
	}
	if b, err = readAndRemove(p.File); err != nil || string(b) != "h2:2\nh0:3\n" {
		t.Errorf("Hydra's host file %q, %v", b, err)
	}
	p, err = hydra.Placement(4, []string{"h0", "h1"}, []string{"h2"}, []string{"h1", "h0", "h1", "h0"})
	if err != nil || p.Pinned || !strings.Contains(p.Note, "not consecutive") || !slices.Equal(p.Args, []string{"-f", p.File}) {
		t.Fatalf("Hydra, not consecutive: %+v %v", p, err)
	}
	if b, err = readAndRemove(p.File); err != nil || string(b) != "h0:2\nh1:2\n" {
		t.Errorf("Hydra's unpinned host file %q, %v", b, err)
	}
	// A pin that is not one host per rank is not followed.
	if p, err := srun.Placement(4, nil, []string{"n1"}, []string{"n2"}); err != nil || p.Pinned || !slices.Equal(p.Args, []string{"--exclude=n1"}) {
		t.Errorf("a short pin: %+v %v", p, err)
	}
}

func readAndRemove(path string) ([]byte, error) {
	defer os.Remove(path)
	return os.ReadFile(path)
}
