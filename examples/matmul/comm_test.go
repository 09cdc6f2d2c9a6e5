package matmul

import "github.com/ckpt/ckpt/examples/comm/commtest"

// The tests run the ranks as goroutines (package commtest).
type localJob = commtest.Job

var (
	newLocalJob = commtest.New
	run         = commtest.Run
	runOK       = commtest.RunOK
	errInjected = commtest.ErrInjected
)
