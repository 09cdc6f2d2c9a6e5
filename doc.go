// Package ckpt is the application interface of the ckpt checkpoint/restart
// system. A job of N ranks (processes) on M nodes saves its state now and
// then; after a failure it goes on from recent state instead of from the
// start.
//
// Each rank opens a Store, starts a checkpoint, writes its files (streamed
// into its node's cache: tmpfs or a local SSD), and commits. Commit is
// collective: the ranks' files are hashed, ranks on distinct nodes form
// redundancy sets (SINGLE, PARTNER, XOR or Reed–Solomon) and compute parity
// across the set, and once everything is durable every node writes the
// manifest that marks the checkpoint complete. A checkpoint is either
// complete and verified or it does not exist.
//
// Restart, also collective, finds the newest checkpoint the job can
// recover: intact in the caches, or rebuilt from the redundancy of its sets
// after nodes were lost or files corrupted. Every byte is verified against
// the manifest before the application reads it; a checkpoint that fails is
// skipped for an older one, and the reasons are reported.
//
// A single process needs no configuration:
//
//	s, _ := ckpt.Open(ckpt.Options{})
//	c, _ := s.Start("step-100")
//	f, _ := c.Create("state.bin")
//	f.Write(state)
//	f.Close()
//	c.Commit(ctx)
//	...
//	r, _ := s.Restart(ctx)
//	rd, _ := r.Open("state.bin")
//
// Several ranks need a Comm: the job runtime (`ckpt run`) provides one over
// the network; LocalJob provides them for ranks that are goroutines of one
// process. SaveValue and LoadValue checkpoint a Go value in one call.
package ckpt
