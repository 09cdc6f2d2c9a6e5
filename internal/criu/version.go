package criu

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a CRIU release: 4.1.1 is {4, 1, 1}.
type Version struct{ Major, Minor, Patch int }

// MinVersion is the oldest CRIU that dumps on this project's kernels:
// CRIU before 4.1 fails on the [vvar_vclock] mapping of kernels from 6.13
// on ("vdso: Failed to fill self vdso symtable").
var MinVersion = Version{4, 1, 0}

// MinTCPVersion is the oldest CRIU that dumps TCP sockets on kernels
// from 6.16 on: those answer getsockopt(SO_PASSCRED) on a socket that is
// not AF_UNIX (or netlink, bluetooth) with EOPNOTSUPP, and CRIU 4.1
// fails the dump on it ("sockets: Can't get 1:16 opt: Operation not
// supported"); 4.2 does without. Checked on 6.18 with 4.1.1 and 4.2.1.
var MinTCPVersion = Version{4, 2, 0}

func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// AtLeast reports whether v is o or newer.
func (v Version) AtLeast(o Version) bool {
	if v.Major != o.Major {
		return v.Major > o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor > o.Minor
	}
	return v.Patch >= o.Patch
}

// ParseVersion reads the version from the output of `criu --version`
// ("Version: 4.1.1", maybe followed by "GitID: ..."). A missing patch
// level is 0 ("Version: 4.2").
func ParseVersion(out string) (Version, error) {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Version:")
		if !ok {
			continue
		}
		parts := strings.Split(strings.TrimSpace(rest), ".")
		if len(parts) < 2 || len(parts) > 3 {
			break
		}
		var n [3]int
		for i, p := range parts {
			x, err := strconv.Atoi(p)
			if err != nil || x < 0 {
				return Version{}, fmt.Errorf("criu --version: bad version %q", strings.TrimSpace(rest))
			}
			n[i] = x
		}
		return Version{n[0], n[1], n[2]}, nil
	}
	return Version{}, fmt.Errorf("criu --version: no \"Version:\" line in %q", strings.TrimSpace(out))
}

// FaultVar and FaultNoHWBreakpoints are the environment variable and value
// with which CRIU 4.1.x does without hardware breakpoints: on some virtual
// machines (this project's among them) they never fire and 4.1's dump
// waits for them forever. 4.2 finds out by itself.
const (
	FaultVar             = "CRIU_FAULT"
	FaultNoHWBreakpoints = "130"
)

// NeedsFault says whether CRIU v needs FaultVar set to dump on such
// machines: 4.1.x does.
func (v Version) NeedsFault() bool { return v.Major == 4 && v.Minor == 1 }
