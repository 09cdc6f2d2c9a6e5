package torture

import (
	"reflect"
	"strings"
	"testing"
)

// Lines as the kernel writes them (6.x): a listener, an established
// connection and a socket in TIME_WAIT (inode 0: no process holds it).
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:B5C7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7496815 1 0000000000000000 100 0 0 10 0
   1: 0100007F:A10B 0100007F:B5C7 01 00000000:00000000 00:00000000 00000000     0        0 7496810 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:8001 0100007F:B5C7 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
`

const procNetTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 100 0 0 10 0
`

// TestPortsOf: the ports a node's sockets hold, each once and sorted,
// IPv4 and IPv6 alike (a listener and a connection on the same port).
func TestPortsOf(t *testing.T) {
	v4, err := parseTCP(procNetTCP)
	if err != nil {
		t.Fatal(err)
	}
	v6, err := parseTCP(procNetTCP6)
	if err != nil {
		t.Fatal(err)
	}
	socks := append(append(v4[:2:2], v4[0]), v6...)
	if got := portsOf(socks); !reflect.DeepEqual(got, []uint16{8080, 0xA10B, 0xB5C7}) {
		t.Fatalf("ports %v", got)
	}
	if got := portsOf(nil); len(got) != 0 {
		t.Fatalf("no sockets: ports %v", got)
	}
}

func TestCutArgs(t *testing.T) {
	got := strings.Join(cutArgs([]uint16{80, 443}), " ")
	want := "-K -t -n state connected ( sport = :80 or dport = :80 or sport = :443 or dport = :443 )"
	if got != want {
		t.Fatalf("ss %s\nwant   %s", got, want)
	}
}

func TestPartitionFilters(t *testing.T) {
	got := partitionFilters([]uint16{80, 443})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d filters, want 8 (2 ports, 2 directions, IPv4 and IPv6):\n%s", len(lines), got)
	}
	for _, want := range []string{
		"filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport 80 0xffff flowid 1:1",
		"filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport 443 0xffff flowid 1:1",
		"filter add dev lo parent 1: protocol ipv6 prio 2 u32 match ip6 dport 80 0xffff flowid 1:1",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	// Every filter sends to the class whose queue drops everything.
	if !strings.Contains(partitionSetup, "classid 1:1 ") || !strings.Contains(partitionSetup, "parent 1:1 handle 10: pfifo limit 0") {
		t.Fatalf("the setup has no dropping class 1:1:\n%s", partitionSetup)
	}
	if partitionFilters(nil) != "" {
		t.Fatal("filters for no port")
	}
}

func TestTmpfsSize(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ peak, want int64 }{
		{0, 8 * mib},
		{-5, 8 * mib},
		{1, 9 * mib},           // rounded up to whole MiB
		{768 << 10, 11 * mib},  // himeno's node cache: 3 MiB + 8
		{5284 << 10, 29 * mib}, // himeno's shared tier: 20.6 MiB + 8, rounded up
		{100 * mib, 408 * mib},
	} {
		if got := tmpfsSize(c.peak); got != c.want {
			t.Errorf("tmpfsSize(%d) = %d MiB, want %d MiB", c.peak, got/mib, c.want/mib)
		}
	}
}

func TestKindsOfTheSandbox(t *testing.T) {
	for _, k := range Kinds {
		net := k == CutNode || k == PartitionNode || k == DiskFull || k == SharedFull
		if k.NeedsSandbox() != net {
			t.Errorf("%s: NeedsSandbox %v", k, k.NeedsSandbox())
		}
		if net && k.Restarts() {
			t.Errorf("%s forces a restart: the job must ride it out", k)
		}
		if lasts := net && k != CutNode || k == HangStage || k == SharedDown; k.Lasts() != lasts {
			t.Errorf("%s: Lasts %v, want %v", k, k.Lasts(), lasts)
		}
	}
}
