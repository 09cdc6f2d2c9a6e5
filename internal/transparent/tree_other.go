//go:build !linux

package transparent

import (
	"context"
	"errors"

	"github.com/ckpt/ckpt/internal/criu"
)

// Processes is the Runner of real process trees; CRIU, and so transparent
// checkpointing, is Linux only.
type Processes struct {
	Program string
	Args    []string
	Env     []string
	Dir     string
	Stdout  string
	Stderr  string
	Tool    criu.Tool
}

var errLinuxOnly = errors.New("transparent checkpointing needs Linux (CRIU)")

func (p *Processes) Start(context.Context) (Tree, error) { return nil, errLinuxOnly }
func (p *Processes) Restore(context.Context, string, string, Meta) (Tree, error) {
	return nil, errLinuxOnly
}
func (p *Processes) Ended(Meta) error { return errLinuxOnly }
