package inproc

import (
	"context"
	"sync"
)

// Run runs fn for every member of the network, each in its own goroutine,
// and returns their errors indexed by member. It closes each member's
// endpoint as soon as its fn returns, as the driver of a real member must:
// a member that failed then makes its peers fail instead of wait, and a
// member that finished lets them drain what it sent.
func (nw *Network) Run(ctx context.Context, fn func(ctx context.Context, me int, tr *Endpoint) error) []error {
	errs := make([]error, nw.n)
	var wg sync.WaitGroup
	for i := range nw.n {
		wg.Go(func() {
			ep := nw.eps[i]
			defer ep.Close()
			errs[i] = fn(ctx, i, ep)
		})
	}
	wg.Wait()
	return errs
}
