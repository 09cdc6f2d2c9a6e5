// Package capitest tests ckpt's SCR-compatible C API (capi/include/scr.h,
// libscr.so) with real MPI programs: C, C++, Fortran and Python programs
// in testdata, each built against a fresh installation
// (scripts/install-capi.sh) and run twice under mpirun, once to write
// checkpoints and once to restart from them, at 1 and 4 ranks. The
// programs check every byte they read back and exit non-zero on any
// difference; the Go tests check what the runs leave behind (files under
// the prefix, exit statuses, abort messages).
//
// The helpers that install, compile and run are in package mpitest.
package capitest
