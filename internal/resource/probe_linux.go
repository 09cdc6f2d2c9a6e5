//go:build linux

package resource

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Probe reads what this process may still use: RLIMIT_NPROC against the
// threads this user runs (or, without such a limit, the kernel's pid_max
// and threads-max against every task), capped by a pids cgroup; RLIMIT_NOFILE
// against the descriptors open; MemAvailable, capped by a memory cgroup's
// limit. What it cannot read is Unknown.
func Probe() Have {
	return Have{Procs: probeProcs(), FDs: probeFDs(), Memory: probeMemory()}
}

// ProbeMemory is Probe's Memory alone, for a rank that needs nothing else.
func ProbeMemory() Limit { return probeMemory() }

const rlimitNproc = 6 // RLIMIT_NPROC on Linux; syscall does not name it

func probeProcs() Limit {
	best := Unknown
	take := func(l Limit) {
		if l.Known() && (!best.Known() || l.Avail < best.Avail) {
			best = l
		}
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(rlimitNproc, &rl); err == nil && rl.Cur < 1<<62 && os.Geteuid() != 0 {
		// Root is not held to RLIMIT_NPROC.
		if used, ok := userThreads(os.Getuid()); ok {
			take(Limit{Avail: max(int64(rl.Cur)-used, 0),
				From: fmt.Sprintf("RLIMIT_NPROC %d (ulimit -u), %d in use by this user", rl.Cur, used)})
		}
	}
	if total, ok := totalTasks(); ok {
		for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
			if v, ok := readInt(f); ok {
				take(Limit{Avail: max(v-total, 0), From: fmt.Sprintf("%s %d, %d tasks running", f, v, total)})
			}
		}
	}
	for _, dir := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/pids"} {
		lim, ok1 := readInt(dir + "/pids.max")
		cur, ok2 := readInt(dir + "/pids.current")
		if ok1 && ok2 {
			take(Limit{Avail: max(lim-cur, 0), From: fmt.Sprintf("cgroup %s/pids.max %d, %d in use", dir, lim, cur)})
			break
		}
	}
	return best
}

func probeFDs() Limit {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur >= 1<<62 {
		return Unknown
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return Unknown
	}
	open := int64(len(ents))
	return Limit{Avail: max(int64(rl.Cur)-open, 0),
		From: fmt.Sprintf("RLIMIT_NOFILE %d (ulimit -n), %d open", rl.Cur, open)}
}

func probeMemory() Limit {
	best := Unknown
	if kb, ok := meminfo("MemAvailable"); ok {
		best = Limit{Avail: kb << 10, From: "MemAvailable in /proc/meminfo"}
	}
	for _, c := range []struct{ limit, usage string }{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		lim, ok1 := readInt(c.limit)
		cur, ok2 := readInt(c.usage)
		if ok1 && ok2 && lim < 1<<60 { // "max", or v1's huge number, means none
			if avail := max(lim-cur, 0); !best.Known() || avail < best.Avail {
				best = Limit{Avail: avail, From: fmt.Sprintf("cgroup limit %s, %d bytes in use", c.limit, cur)}
			}
			break
		}
	}
	return best
}

// readInt reads a file holding one integer ("max" is not one).
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

func meminfo(key string) (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// totalTasks is the number of tasks (threads) on the machine, from
// /proc/loadavg's "running/total" field.
func totalTasks() (int64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(total, 10, 64)
	return v, err == nil
}

// userThreads counts the threads of uid's processes, which RLIMIT_NPROC
// limits on Linux.
func userThreads(uid int) (int64, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := []byte(strconv.Itoa(uid))
	var n int64
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		var mine bool
		var threads int64 = 1
		for line := range bytes.Lines(b) {
			if v, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
				f := bytes.Fields(v)
				mine = len(f) > 0 && bytes.Equal(f[0], want)
			} else if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
				if t, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil {
					threads = t
				}
			}
		}
		if mine {
			n += threads
		}
	}
	return n, true
}
