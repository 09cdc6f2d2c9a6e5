package launch

import (
	"net"
	"strings"
)

// SameHost reports whether host names a and b name the same host. Hosts
// come from different sources (a rank's os.Hostname, ckpt's own, mpirun's
// --host list, Slurm's node names), and a site may give one its short
// name (node7) and another its fully qualified one (node7.cluster.org):
// when exactly one of the two has a domain, their first labels are
// compared. Two names that both have a domain must be equal (node7.a and
// node7.b are different hosts), and so must IP addresses. Case does not
// matter (DNS names are case-insensitive, RFC 4343).
func SameHost(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	if a == "" || b == "" || net.ParseIP(a) != nil || net.ParseIP(b) != nil {
		return false
	}
	ahead, _, adot := strings.Cut(a, ".")
	bhead, _, bdot := strings.Cut(b, ".")
	if adot == bdot {
		return false // both short (and different), or both qualified
	}
	return strings.EqualFold(ahead, bhead)
}

// containsHost reports whether hosts hold a name of host (SameHost).
func containsHost(hosts []string, host string) bool {
	for _, h := range hosts {
		if SameHost(h, host) {
			return true
		}
	}
	return false
}
