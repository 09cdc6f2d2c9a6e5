package torture

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/jobenv"
)

// A table as /proc/PID/net/tcp and tcp6 write it: a listener, a
// connection to it, and IPv6's spelling of loopback and of an IPv4
// address.
const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A205 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7632729 1 0000000094593ff0 100 0 0 10 0
   1: 0100007F:A205 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 7632800 1 0000000094593ff0 20 4 30 10 -1
   2: 0100007F:D431 0100007F:A205 08 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000094593ff0 20 4 30 10 -1
`

const tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F91 0000000000000000FFFF00000A00000A:C350 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0
`

func TestParseTCP(t *testing.T) {
	got, err := parseTCP(tcpTable)
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort
	want := []socket{
		{local: ap("127.0.0.1:41477"), remote: ap("0.0.0.0:0"), state: tcpListen, inode: 7632729},
		{local: ap("127.0.0.1:41477"), remote: ap("127.0.0.1:54321"), state: 1, inode: 7632800},
		{local: ap("127.0.0.1:54321"), remote: ap("127.0.0.1:41477"), state: 8, inode: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tcp:\n got %v\nwant %v", got, want)
	}
	got, err = parseTCP(tcp6Table)
	if err != nil {
		t.Fatal(err)
	}
	want = []socket{
		{local: ap("[::1]:8080"), remote: ap("[::]:0"), state: tcpListen, inode: 4242},
		// An IPv4-mapped address is the IPv4 address a process was given.
		{local: ap("127.0.0.1:8081"), remote: ap("10.0.0.10:50000"), state: 1, inode: 4343},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tcp6:\n got %v\nwant %v", got, want)
	}
	for _, bad := range []string{
		"header\n   0: 0100007F:A205 00000000:0000 0A\n",                                                        // too few fields
		"header\n   0: 0100007G:A205 00000000:0000 0A 0:0 0:0 0 0 0 1\n",                                        // not hex
		"header\n   0: 0100007F:A205 00000000:0000 0A 0:0 0:0 0 0 0 inode\n",                                    // no inode
		"header\n   0: 0100007F 00000000:0000 0A 0:0 0:0 0 0 0 1\n",                                             // no port
		"header\n   0: 0100007F00:A205 00000000:0000 0A 0:0 0:0 0 0 0 1\n",                                      // 5 bytes
		"header\n   0: 0100007F:A205 00000000:0000 0A 0:0 0:0 0 0 0 1\n   1: 0100007F:A205 00000000:0000 XYZ\n", // a bad line after a good one
	} {
		if s, err := parseTCP(bad); err == nil {
			t.Errorf("parseTCP(%q) = %v, want an error", bad, s)
		}
	}
}

func TestParseEnviron(t *testing.T) {
	env := parseEnviron([]byte("PATH=/bin\x00" + jobenv.VarCoord + "=127.0.0.1:5000\x00EMPTY=\x00A=b=c\x00junk\x00\x00"))
	want := map[string]string{"PATH": "/bin", jobenv.VarCoord: "127.0.0.1:5000", "EMPTY": "", "A": "b=c"}
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("got %v, want %v", env, want)
	}
}

func rankEnv(token, inc, node, coord string) map[string]string {
	return map[string]string{jobenv.VarToken: token, jobenv.VarIncarnation: inc, jobenv.VarNode: node, jobenv.VarCoord: coord}
}

func TestJobOf(t *testing.T) {
	// Four ranks on two nodes, each node's ranks at their relay.
	f, err := jobOf([]map[string]string{
		rankEnv("tok", "3", "node0", "127.0.0.1:100"), rankEnv("tok", "3", "node0", "127.0.0.1:100"),
		rankEnv("tok", "3", "node1", "127.0.0.1:200"), rankEnv("tok", "3", "node1", "127.0.0.1:200"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := jobFacts{token: "tok", inc: 3, nodes: []string{"node0", "node1"},
		byNode: map[string][]int32{"node0": {0, 1}, "node1": {2, 3}},
		coord:  map[netip.AddrPort]string{netip.MustParseAddrPort("127.0.0.1:100"): "node0", netip.MustParseAddrPort("127.0.0.1:200"): "node1"}}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
	for name, envs := range map[string][]map[string]string{
		"no token":        {rankEnv("", "0", "node0", "127.0.0.1:1")},
		"bad incarnation": {rankEnv("tok", "x", "node0", "127.0.0.1:1")},
		"bad coordinator": {rankEnv("tok", "0", "node0", "localhost")},
		"two launches":    {rankEnv("tok", "0", "node0", "127.0.0.1:1"), rankEnv("other", "1", "node0", "127.0.0.1:1")},
	} {
		if _, err := jobOf(envs); err == nil || !strings.Contains(err.Error(), ErrNothingToHit.Error()) {
			t.Errorf("%s: %v, want a fault with nothing to hit", name, err)
		}
	}
}

// attackRunner's jobs are Fake's that are Attackers: a hostile fault's
// attacks find what attacks says, and, if restart, the job restarts.
type attackRunner struct {
	*Fake
	attacks Attacks
	restart bool
}

type attackJob struct {
	Job
	r *attackRunner
}

func (r *attackRunner) Start(ctx context.Context, w Workload, seq int) (Job, error) {
	j, err := r.Fake.Start(ctx, w, seq)
	return attackJob{j, r}, err
}

func (j attackJob) Inject(ctx context.Context, f Fault) (time.Time, error) {
	if j.r.restart {
		f.Kind = KillRank // the fake restarts the job
	}
	return j.Job.Inject(ctx, f)
}

func (j attackJob) Attacks() Attacks { return j.r.attacks }

func runAttacked(t *testing.T, r *attackRunner, faults int) Result {
	t.Helper()
	res, err := Run(context.Background(), Config{Seed: 3, Duration: time.Hour, MaxFaults: faults, Kinds: []Kind{Hostile},
		Workloads: []Workload{fakeWorkload}, RecoverTimeout: time.Minute}, r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunCountsHostileFailures(t *testing.T) {
	held := map[string]int{"coordinator": 9, "peer": 35}
	r := &attackRunner{Fake: &Fake{Steps: 100, Every: 10}, attacks: Attacks{Held: held, Cut: 1,
		Failed: []string{"peer of rank 1 at 127.0.0.1:4000: peer of rank 1/silent: FAILED after 15s: connection still open after 15s"}}}
	res := runAttacked(t, r, 2)
	if res.HostileFailures != 2 || !res.Failed() || res.WrongResults != 0 {
		t.Fatalf("two hostile faults with a failed attack each: %+v", res)
	}
	if len(res.Problems) != 2 || !strings.Contains(res.Problems[0], "hostile: #1 hostile") || !strings.Contains(res.Problems[0], "silent: FAILED") {
		t.Fatalf("problems %q", res.Problems)
	}
	if !reflect.DeepEqual(res.AttacksHeld, map[string]int{"coordinator": 18, "peer": 70}) || res.AttacksCut != 2 {
		t.Fatalf("attacks held %v, cut %d", res.AttacksHeld, res.AttacksCut)
	}
	// The job rode them out: each hostile fault has a time to its next
	// checkpoint, and no restart.
	if _, ok := res.RecoverSeconds[Hostile]; len(res.Recoveries) != 0 || !ok || res.FaultsInjected != 2 {
		t.Fatalf("recoveries %v, recover seconds %v", res.Recoveries, res.RecoverSeconds)
	}

	// Attacks that all held are no failure.
	r.attacks.Failed = nil
	if res := runAttacked(t, r, 2); res.Failed() || res.HostileFailures != 0 || len(res.Problems) != 0 {
		t.Fatalf("attacks that held: %+v", res)
	}
}

func TestRunCountsARestartDuringAHostileFault(t *testing.T) {
	r := &attackRunner{Fake: &Fake{Steps: 100, Every: 10}, attacks: Attacks{Held: map[string]int{"coordinator": 9}}, restart: true}
	res := runAttacked(t, r, 2)
	if res.HostileFailures != 2 || !res.Failed() || res.Recoveries["cache"] != 2 {
		t.Fatalf("two restarts during hostile faults: %+v", res)
	}
	for _, p := range res.Problems {
		if !strings.Contains(p, "restarted during #") {
			t.Fatalf("problems %q", res.Problems)
		}
	}
}
