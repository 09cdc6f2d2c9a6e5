package jobenv

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// VarSlurmEndTime is where Slurm (21.08 and later) gives a job step its
// allocation's end, in Unix seconds.
const VarSlurmEndTime = "SLURM_JOB_END_TIME"

// EndTime is the end of the job's allocation from the first of names that
// is set (Unix seconds, as Slurm's SLURM_JOB_END_TIME and SCR's
// SCR_END_TIME give it), the name it came from, or the zero time and ""
// if none is set. A value that is not Unix seconds is an *Error.
func EndTime(lookup func(string) (string, bool), names ...string) (time.Time, string, error) {
	for _, k := range names {
		if v, ok := lookup(k); ok && v != "" {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, k, &Error{Name: k, Value: v, Reason: "not Unix seconds"}
			}
			return time.Unix(sec, 0), k, nil
		}
	}
	return time.Time{}, "", nil
}

// ParseSqueueEnd reads the end time `squeue -h -j ID -o %e` prints
// (2026-11-26T20:50:00, the local time), zero for a job without one
// (N/A, Unknown, NONE).
func ParseSqueueEnd(out string, loc *time.Location) (time.Time, error) {
	v := strings.TrimSpace(out)
	if first, _, ok := strings.Cut(v, "\n"); ok {
		v = strings.TrimSpace(first)
	}
	switch strings.ToUpper(v) {
	case "", "N/A", "UNKNOWN", "NONE", "UNLIMITED":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("squeue's end time %q: want YYYY-MM-DDTHH:MM:SS", v)
	}
	return t, nil
}
