package matmul

import "github.com/ckpt/ckpt/examples/comm"

// Comm is what the solver needs from the job runtime (see package comm);
// ckpt.Job satisfies it.
type Comm = comm.Comm
