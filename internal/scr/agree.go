package scr

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/internal/engine"
	"github.com/ckpt/ckpt/internal/jobenv"
)

// The C layer's collectives, over ckpt's Comm instead of MPI: for ranks
// that ckpt run started as MPI singletons (each its own MPI_COMM_WORLD of
// one), whose job only ckpt's coordinator knows. Under mpirun the C layer
// uses MPI for these.

// AllValid is the AND of valid over every rank, and whether any rank
// routed a file (files is this rank's count).
func (l *Lib) AllValid(ctx context.Context, valid bool, files int) (all, anyFiles bool, err error) {
	type end struct {
		Valid bool `json:"v"`
		Files int  `json:"f"`
	}
	ends, err := engine.GatherJSON(ctx, l.comm, end{valid, files})
	if err != nil {
		return false, true, err
	}
	all = true
	for _, e := range ends {
		all = all && e.Valid
		anyFiles = anyFiles || e.Files != 0
	}
	return all, anyFiles, nil
}

// RootAnswer is the worst (largest) of every rank's return code rc, and
// rank 0's flag.
func (l *Lib) RootAnswer(ctx context.Context, rc, flag int) (worst, rootFlag int, err error) {
	all, err := engine.GatherJSON(ctx, l.comm, [2]int{rc, flag})
	if err != nil {
		return 1, 0, err
	}
	for _, a := range all {
		worst = max(worst, a[0])
	}
	return worst, all[0][1], nil
}

// Same checks that every rank passed the same s (a dataset name, flags, a
// name): a *Misuse naming call and what, on every rank, when one differs.
func (l *Lib) Same(ctx context.Context, call, what, s string) error {
	all, err := engine.GatherJSON(ctx, l.comm, s)
	if err != nil {
		return err
	}
	for r, v := range all {
		if v != all[0] {
			return misuse(call, "the %s differs across ranks: rank %d has %q, rank 0 %q", what, r, v, all[0])
		}
	}
	return nil
}

// Identity is the rank and size the C layer works with: MPI's, unless
// ckpt run started the ranks as MPI singletons (MPI size 1 in a job
// CKPT_SIZE says has more), when they are ckpt run's and ckpt says so.
func Identity(mpiRank, mpiSize int, env func(string) (string, bool)) (rank, size int, viaCkpt bool, err error) {
	if mpiSize != 1 || !UnderLauncher(env) {
		return mpiRank, mpiSize, false, nil
	}
	var r, s int
	rv, _ := env(jobenv.VarRank)
	sv, _ := env(jobenv.VarSize)
	if _, err := fmt.Sscan(sv, &s); err != nil || s <= 1 {
		return mpiRank, mpiSize, false, nil
	}
	if _, err := fmt.Sscan(rv, &r); err != nil || r < 0 || r >= s {
		return 0, 0, false, fmt.Errorf("%s=%q: not a rank of %s=%s", jobenv.VarRank, rv, jobenv.VarSize, sv)
	}
	return r, s, true, nil
}
