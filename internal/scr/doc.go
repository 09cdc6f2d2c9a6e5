// Package scr is the Go core of ckpt's SCR-compatible C API (capi/scr.h,
// docs/C-API.md): the semantics of LLNL's SCR 3.1 interface as plain Go,
// over ckpt's checkpoint engine.
//
// The C layer (capi/scr.c, built with the MPI compiler wrapper) does only
// what needs MPI: the rank and size, broadcasting rank 0's coordinator
// address, checking that names, flags and configuration strings agree
// across ranks, the AND of the ranks' valid flags, broadcasting rank 0's
// Need_checkpoint and Should_exit answers, and MPI_Abort. cmd/libscr turns
// C types into Go ones and calls this package. Everything else is here:
//
//   - pure parts, tested step by step: the state machine (state.go), the
//     parameters and SCR_Config's string forms (params.go), dataset names
//     and the paths Route_file resolves (names.go), when to checkpoint
//     and when to exit (decide.go), the dataset index (index.go);
//   - the driver (lib.go): a Lib per rank over an engine.Engine and the
//     job's engine.Comm. Its collective methods must be called by every
//     rank in the same order, with the same arguments, as SCR requires;
//     the C layer checks that before it calls them.
//
// The package sits beside the module root rather than on top of it: no
// internal package may import the root (TestLayers), and what SCR needs
// beyond the public Go API (restarting while passing over checkpoints an
// application marked failed, deleting one everywhere) is the engine's.
//
// Errors: a method returns a *Misuse for what SCR aborts on (a call in
// the wrong state, a routed file outside the prefix); the C layer prints
// it and calls MPI_Abort. Any other error is a failure the call reports
// by returning 1.
package scr
