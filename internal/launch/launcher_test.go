package launch

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// lateLauncher is Local whose ranks cannot be killed until notYet tries
// have said ErrNotJoined (a rank that has not published its process yet),
// or never (err): what an External launcher's ranks may say.
type lateLauncher struct {
	notYet int
	err    error
	tries  int // kills tried, over every attempt
}

func (l *lateLauncher) Name() string { return "late" }

func (l *lateLauncher) Start(ctx context.Context, s Spec) (Ranks, error) {
	r, err := Local{}.Start(ctx, s)
	if err != nil {
		return nil, err
	}
	return &lateRanks{Ranks: r, l: l}, nil
}

type lateRanks struct {
	Ranks
	l *lateLauncher
}

func (r *lateRanks) Kill(rank int) error {
	r.l.tries++
	switch {
	case r.l.err != nil:
		return r.l.err
	case r.l.tries <= r.l.notYet:
		return ErrNotJoined
	}
	return r.Ranks.Kill(rank)
}

// A failure injected into a rank not found yet strikes as soon as it is.
func TestRunInjectsIntoALateRank(t *testing.T) {
	f := newFixture(t, "hang-first", 2, 1)
	l := &lateLauncher{notYet: 3}
	f.cfg.Launcher = l
	f.cfg.Failures = &schedule{at: []time.Duration{100 * time.Millisecond}, targets: []int{0}}
	rep, err := Run(t.Context(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Injected != 1 || len(rep.Attempts) != 2 || rep.Attempts[0].Class != ClassFailure {
		t.Fatalf("injected %d, attempts %+v", rep.Injected, rep.Attempts)
	}
	if l.tries != 4 {
		t.Errorf("the kill was tried %d times, want 3 refusals then the kill", l.tries)
	}
}

// A failure that cannot be injected at all (a rank on another host) ends
// the run with the reason, every rank of the attempt killed.
func TestRunInjectionImpossible(t *testing.T) {
	f := newFixture(t, "hang-first", 2, 1)
	f.cfg.Launcher = &lateLauncher{err: errors.New("rank 0 runs on host h2, not on this one")}
	f.cfg.Failures = &schedule{at: []time.Duration{100 * time.Millisecond}, targets: []int{0}}
	rep, err := Run(t.Context(), f.cfg)
	if err == nil || !strings.Contains(err.Error(), "host h2") {
		t.Fatalf("Run: %v, want the injection's error", err)
	}
	if len(rep.Attempts) != 1 {
		t.Errorf("%d attempts, want the one that could not be injected into", len(rep.Attempts))
	}
}

// The last line of a launcher's output that can say why it failed:
// neither mpirun's rules of dashes nor srun's pointer to its help, which
// follows the line naming the bad option.
func TestPrefixWriterLast(t *testing.T) {
	var mu sync.Mutex
	var out strings.Builder
	p := &prefixWriter{mu: &mu, w: &out, prefix: "[srun] "}
	io.WriteString(p, "srun: unrecognized option '--bogus'\nTry \"srun --help\" for more information\n")
	if got := p.last(); got != "srun: unrecognized option '--bogus'" {
		t.Errorf("last %q, want srun's line naming the option", got)
	}
	io.WriteString(p, "---------\nmpirun: an error\n------------\n")
	if got := p.last(); got != "mpirun: an error" {
		t.Errorf("last %q, want mpirun's message inside its rules", got)
	}
	io.WriteString(p, "a partial line")
	if got := p.last(); got != "a partial line" {
		t.Errorf("last %q, want the partial line", got)
	}
	if !strings.Contains(out.String(), "[srun] Try \"srun --help\" for more information\n") {
		t.Errorf("the help line was not passed on:\n%s", out.String())
	}
}
