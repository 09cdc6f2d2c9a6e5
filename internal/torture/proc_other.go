//go:build !linux

package torture

import (
	"context"
	"errors"
)

var errNoProc = errors.New("ckpt torture needs Linux (/proc) to find a job's processes")

// Reference is not available here.
func (p *Procs) Reference(context.Context, Workload) ([]Event, error) { return nil, errNoProc }

// Start is not available here.
func (p *Procs) Start(context.Context, Workload, int) (Job, error) { return nil, errNoProc }
