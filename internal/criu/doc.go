// Package criu drives CRIU (checkpoint/restore in userspace), the tool
// that saves a running Linux process tree into image files and recreates
// it from them, for ckpt's transparent mode (internal/transparent,
// docs/TRANSPARENT.md).
//
// Find locates the criu binary (CKPT_CRIU, else PATH) and Check says,
// before anything starts, whether transparent checkpointing can work
// here: CRIU's version (4.1 or newer: older ones cannot dump on kernels
// from 6.13 on) and `criu check` (the kernel's features, the privileges).
// What is missing comes back as an *Unavailable, which wraps
// ErrUnavailable.
//
// Tool is the narrow interface the rest of ckpt uses: Dump a process tree
// into a directory, Restore a tree from one as a child of the caller. CLI
// implements it over CRIU's RPC service (`criu swrk`) with the Go module
// github.com/checkpoint-restore/go-criu; Fake is its in-memory twin for
// tests of the logic around it.
package criu
