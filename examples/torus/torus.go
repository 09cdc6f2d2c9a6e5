// Package torus is the synthetic application of Fialho, Rexachs and Luque
// 2011 (§4.2.1): SPMD ranks on a W×H torus that, every step, compute (a
// matrix product) and then exchange with their right and lower
// neighbours, receiving from their left and upper ones, until a set
// number of steps is done. Every message goes through Job.Send and
// Job.Recv, so the job runs under either strategy of ckpt run
// (coordinated, or uncoordinated with message logging, where one failed
// rank recovers alone). Its result is exact integer arithmetic: any lost,
// duplicated or reordered message, or a wrong restored state, changes it,
// and Reference computes it sequentially for a check bit for bit.
//
// `ckpt example torus` runs it; `ckpt demo --strategy` compares the two
// strategies on it.
package torus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt/ckpt"
)

// Config is a run of the torus.
type Config struct {
	W, H  int // the torus: W×H ranks
	Steps int // compute-and-exchange steps
	// N is the order of each step's matrix product (the compute phase:
	// N³ multiply-adds); 0 computes nothing but the exchange.
	N int
	// AfterStep, if not nil, is called after each step's exchange,
	// before the checkpoint decision (a test's failure point).
	AfterStep func(job *ckpt.Job, step int) error
	// InCheckpoint, if not nil, is called in the rank's checkpoint at
	// step, before its state is saved (a test's failure point).
	InCheckpoint func(job *ckpt.Job, step int) error
	// NoRestart never calls Restart: the rank always starts from the
	// beginning.
	NoRestart bool
}

// Validate checks the sizes.
func (c Config) Validate() error {
	switch {
	case c.W < 1 || c.H < 1 || c.W*c.H < 2:
		return fmt.Errorf("torus %d×%d: need at least 2 ranks", c.W, c.H)
	case c.Steps < 1:
		return fmt.Errorf("torus: %d steps: need at least 1", c.Steps)
	case c.N < 0 || c.N > 2048:
		return fmt.Errorf("torus: matrix order %d: want 0 to 2048", c.N)
	}
	return nil
}

// Mix is splitmix64's finaliser.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Neighbours of rank r on the torus.
func (c Config) Neighbours(r int) (right, down, left, up int) {
	x, y := r%c.W, r/c.W
	return (x+1)%c.W + y*c.W, x + (y+1)%c.H*c.W, (x+c.W-1)%c.W + y*c.W, x + (y+c.H-1)%c.H*c.W
}

// Compute is the compute phase of rank r's step from its value v: the
// product of two N×N matrices drawn from v and the step, folded into one
// word (wrapping integer arithmetic: the same bits on every machine).
func (c Config) Compute(v uint64, step int) uint64 {
	n := c.N
	if n == 0 {
		return v
	}
	a := make([]uint64, n*n)
	b := make([]uint64, n*n)
	seed := Mix(v ^ uint64(step)<<32)
	for i := range a {
		a[i] = Mix(seed + uint64(i))
		b[i] = Mix(seed ^ uint64(i)<<1)
	}
	acc := v
	row := make([]uint64, n)
	for i := range n {
		clear(row)
		for k := range n {
			aik := a[i*n+k]
			bk := b[k*n : k*n+n]
			for j := range row {
				row[j] += aik * bk[j]
			}
		}
		for _, x := range row {
			acc = acc*31 + x
		}
	}
	return Mix(acc)
}

// Send is what a rank sends at step from its computed value v; Step its
// value after receiving l from the left and u from above.
func Send(v uint64, step int) uint64 { return Mix(v ^ uint64(step)) }
func Step(s, l, u uint64) uint64     { return Mix(Mix(s^l) ^ (u * 0x2545f4914f6cdd1d)) }

// Reference is the result computed sequentially, without failures.
func (c Config) Reference() string {
	n := c.W * c.H
	v := make([]uint64, n)
	for r := range v {
		v[r] = uint64(r) + 1
	}
	for step := 1; step <= c.Steps; step++ {
		s := make([]uint64, n)
		for r := range s {
			s[r] = Send(c.Compute(v[r], step), step)
		}
		for r := range v {
			_, _, left, up := c.Neighbours(r)
			v[r] = Step(s[r], s[left], s[up])
		}
	}
	return c.Result(v)
}

// Result is the job's result line from every rank's final value.
func (c Config) Result(v []uint64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%016x", x)
	}
	return fmt.Sprintf("torus %dx%d steps=%d n=%d %s", c.W, c.H, c.Steps, c.N, strings.Join(parts, " "))
}

// payload carries v in a message whose length varies with the step.
func payload(v uint64, step int) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, v), make([]byte, step%5)...)
}

// Tags of the messages: to the right, down, and the final gather.
const (
	tagRight  = 1
	tagDown   = 2
	tagGather = 3
)

// Run is one rank of the torus in job (of W×H ranks): it restarts from
// its newest checkpoint unless NoRestart, steps, checkpoints as the job's
// policy says, and at the end rank 0 gathers every rank's value (through
// the same logged channels), and returns and finishes with the result
// line; the other ranks return "".
func Run(ctx context.Context, job *ckpt.Job, cfg Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", ckpt.ConfigError(err)
	}
	if job.Size() != cfg.W*cfg.H {
		return "", ckpt.ConfigError(fmt.Errorf("torus %d×%d needs %d ranks, the job has %d", cfg.W, cfg.H, cfg.W*cfg.H, job.Size()))
	}
	me := job.Rank()
	right, down, left, up := cfg.Neighbours(me)
	v, first := uint64(me)+1, 1
	if !cfg.NoRestart {
		res, err := job.Restart(ctx)
		switch {
		case err == nil:
			if first, v, err = restore(res); err != nil {
				return "", err
			}
		case !errors.Is(err, ckpt.ErrNoCheckpoint):
			return "", err
		}
	}
	buf := make([]byte, 16)
	for step := first; step <= cfg.Steps; step++ {
		s := Send(cfg.Compute(v, step), step)
		if err := job.Send(ctx, right, tagRight, payload(s, step)); err != nil {
			return "", err
		}
		if err := job.Send(ctx, down, tagDown, payload(s, step)); err != nil {
			return "", err
		}
		l, err := job.Recv(ctx, left, tagRight, buf)
		if err != nil {
			return "", err
		}
		lv := binary.LittleEndian.Uint64(l)
		u, err := job.Recv(ctx, up, tagDown, buf)
		if err != nil {
			return "", err
		}
		v = Step(s, lv, binary.LittleEndian.Uint64(u))
		if cfg.AfterStep != nil {
			if err := cfg.AfterStep(job, step); err != nil {
				return "", err
			}
		}
		need, err := job.NeedCheckpoint(ctx, int64(step))
		if err != nil {
			return "", err
		}
		if need {
			if err := save(ctx, job, step, v, cfg.InCheckpoint); err != nil {
				return "", err
			}
		}
	}
	if me != 0 {
		if err := job.Send(ctx, 0, tagGather, binary.LittleEndian.AppendUint64(nil, v)); err != nil {
			return "", err
		}
		return "", job.Finish(ctx, "")
	}
	all := []uint64{v}
	for p := 1; p < job.Size(); p++ {
		b, err := job.Recv(ctx, p, tagGather, buf)
		if err != nil {
			return "", err
		}
		all = append(all, binary.LittleEndian.Uint64(b))
	}
	result := cfg.Result(all)
	return result, job.Finish(ctx, result)
}

// stateFile holds a rank's step and value.
const stateFile = "state"

func save(ctx context.Context, job *ckpt.Job, step int, v uint64, in func(*ckpt.Job, int) error) error {
	return job.Checkpoint(ctx, fmt.Sprintf("torus-%d", step), func(c *ckpt.Checkpoint) error {
		if in != nil {
			if err := in(job, step); err != nil {
				return err
			}
		}
		f, err := c.Create(stateFile)
		if err != nil {
			return err
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(step))
		if _, err := f.Write(binary.LittleEndian.AppendUint64(b, v)); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// restore reads the state: the step to go on from and the value.
func restore(res *ckpt.Restored) (int, uint64, error) {
	rd, err := res.Open(stateFile)
	if err != nil {
		return 0, 0, err
	}
	defer rd.Close()
	var b [16]byte
	if _, err := io.ReadFull(rd, b[:]); err != nil {
		return 0, 0, fmt.Errorf("torus: restore from %s: %w", res.Name(), err)
	}
	return int(binary.LittleEndian.Uint64(b[:])) + 1, binary.LittleEndian.Uint64(b[8:]), nil
}
