package tcplock

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// A /proc/net/tcp of a host: a listener, two established connections
// (one another process's), one in TIME_WAIT.
const procTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 01004D0A:1B58 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 501 1 0000000000000000 100 0 0 10 0
   1: 01004D0A:1B58 02004D0A:B3A4 01 00000000:00000000 00:00000000 00000000     0        0 502 1 0000000000000000 20 4 30 10 -1
   2: 01004D0A:1B59 03004D0A:B3A5 01 00000000:00000000 00:00000000 00000000     0        0 503 1 0000000000000000 20 4 30 10 -1
   3: 01004D0A:1B58 02004D0A:B3A0 06 00000000:00000000 03:00000D2F 00000000     0        0 0 3 0000000000000000
`

func TestParse(t *testing.T) {
	got, err := Parse(procTCP, false, map[uint64]bool{501: true, 502: true, 0: true})
	if err != nil {
		t.Fatal(err)
	}
	// Only the established connection of the tree's sockets: not the
	// listener, not another's, not the TIME_WAIT (inode 0).
	want := []Conn{{Local: netip.MustParseAddrPort("10.77.0.1:7000"), Remote: netip.MustParseAddrPort("10.77.0.2:45988")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseV6(t *testing.T) {
	// ::ffff:10.77.0.1 port 80 to ::1 port 1234.
	text := "  sl  local_address                         remote_address                        st\n" +
		"   0: 0000000000000000FFFF00000100" + "4D0A:0050 00000000000000000000000001000000:04D2 01 00000000:00000000 00:00000000 00000000     0        0 9 1\n"
	got, err := Parse(text, true, map[uint64]bool{9: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Conn{{Local: netip.MustParseAddrPort("10.77.0.1:80"), Remote: netip.MustParseAddrPort("[::1]:1234")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParseBad(t *testing.T) {
	for _, text := range []string{
		"   1: 01004D0A:1B58 02004D0A 01 0 0 0 0 0 502\n",    // no port
		"   1: 01004D0A:1B58 02004D0A:B3A4 01 0 0 0 0 0 x\n", // inode
		"   1: 01004D0A:1B58\n",                              // short
		"   1: 014D0A:1B58 02004D0A:B3A4 01 0 0 0 0 0 502\n", // address length
	} {
		if _, err := Parse(text, false, map[uint64]bool{502: true}); err == nil || !strings.Contains(err.Error(), "tcplock") {
			t.Errorf("%q: err %v, want one", text, err)
		}
	}
}
