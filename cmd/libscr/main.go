// Command libscr is the Go half of ckpt's SCR-compatible C API, built as a
// C shared library (go build -buildmode=c-shared -o libckptscr.so): thin
// exports that turn C types into Go ones and call internal/scr. The C
// layer capi/scr.c (built with mpicc into libscr.so) calls them; their
// prototypes are in capi/ckptscr.h.
//
// Every export returns 0 for success, 1 for a failure the SCR call
// reports by returning 1, and 2 for a misuse SCR aborts on: the message
// "SCR_<Call>: ..." is then on stderr already and the C layer calls
// MPI_Abort. Built as a plain program (go build ./...) it does nothing.
package main

/*
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/ckpt/ckpt/internal/rank"
	"github.com/ckpt/ckpt/internal/scr"
)

func main() {}

// maxFilename is scr.h's SCR_MAX_FILENAME: the size of the buffers the
// application hands Route_file, Have_restart and Start_restart.
const maxFilename = 1024

// The library's state: one job per process, calls from the application's
// thread (SCR is not thread safe either), under mu all the same.
var (
	mu       sync.Mutex
	params   = scr.NewParams(os.LookupEnv)
	lib      *scr.Lib
	rt       *rank.Runtime
	coord    *scr.Coordinator
	disabled bool // SCR_ENABLE=0 at Init: every later call fails
	started  bool // SCR_Init was called
)

const (
	ok      = 0
	failed  = 1
	aborted = 2
)

// result turns an error into a return code, printing it.
func result(call string, err error) C.int {
	if err == nil {
		return ok
	}
	var m *scr.Misuse
	if errors.As(err, &m) {
		fmt.Fprintf(os.Stderr, "%s\n", m)
		return aborted
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", call, err)
	return failed
}

// ready says whether a call may go on: the library is initialized and
// enabled. A call before Init is the state machine's misuse.
func ready(call string) (C.int, bool) {
	switch {
	case disabled:
		return failed, false
	case lib == nil:
		return result(call, scr.Check(call, scr.Uninit)), false
	}
	return ok, true
}

// copyOut copies s into the application's buffer of maxFilename bytes
// (NULL: nothing); it fails for a string that does not fit.
func copyOut(call string, s string, buf *C.char) C.int {
	if buf == nil {
		return ok
	}
	if len(s) >= maxFilename {
		return result(call, &scr.Misuse{Call: call, What: fmt.Sprintf("%q is longer than SCR_MAX_FILENAME", s)})
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), maxFilename)
	copy(b, s)
	b[len(s)] = 0
	return ok
}

func ctx() context.Context { return context.Background() }

//export ckptscr_config
func ckptscr_config(config *C.char, out **C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	*out = nil
	if disabled {
		return failed
	}
	if config == nil {
		return result("SCR_Config", errors.New("NULL configuration string"))
	}
	v, found, err := params.Config(C.GoString(config), lib != nil)
	if err != nil {
		if lib != nil {
			return result("SCR_Config", &scr.Misuse{Call: "SCR_Config", What: err.Error()})
		}
		return result("SCR_Config", err)
	}
	if found {
		*out = C.CString(v) // malloc'd: the application frees it
	}
	return ok
}

//export ckptscr_init_start
func ckptscr_init_start(crank, csize C.int, oneHost C.int, info *C.char, infoLen C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	if started {
		return result("SCR_Init", scr.Check("SCR_Init", scr.Idle))
	}
	started = true
	cwd, err := os.Getwd()
	if err != nil {
		return result("SCR_Init", err)
	}
	if err := params.LoadFile(cwd); err != nil {
		return result("SCR_Init", err)
	}
	if !scr.Enabled(params) {
		disabled = true
		return failed
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(info)), int(infoLen))
	b[0] = 0
	if crank == 0 && csize > 1 && !scr.UnderLauncher(os.LookupEnv) {
		c, err := scr.StartCoordinator(int(csize), oneHost != 0)
		if err != nil {
			return result("SCR_Init", err)
		}
		if len(c.Info) >= len(b) {
			c.Close()
			return result("SCR_Init", errors.New("the coordinator's address is too long"))
		}
		coord = c
		copy(b, c.Info)
		b[len(c.Info)] = 0
	}
	return ok
}

//export ckptscr_init_join
func ckptscr_init_join(crank, csize C.int, info *C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	if disabled {
		return failed
	}
	cwd, err := os.Getwd()
	if err != nil {
		return result("SCR_Init", err)
	}
	host, _ := os.Hostname()
	node, err := scr.NodeFor(params, int(crank), int(csize), host)
	if err != nil {
		return result("SCR_Init", err)
	}
	r, err := scr.Join(ctx(), int(crank), int(csize), node, C.GoString(info), os.LookupEnv)
	if err != nil {
		return result("SCR_Init", err)
	}
	s := scr.Setup{Rank: int(crank), Size: int(csize), Node: node, Params: params, Cwd: cwd}
	if c := r.Comm(); c != nil {
		s.Comm = c
	}
	s.Halting, s.Decide = r.Halting, r.NeedCheckpoint
	l, err := scr.Open(ctx(), s)
	if err != nil {
		r.Close()
		return result("SCR_Init", err)
	}
	lib, rt = l, r
	return ok
}

//export ckptscr_finalize
func ckptscr_finalize() C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready("SCR_Finalize"); !go_ {
		return rc
	}
	err := lib.Finalize(ctx())
	var m *scr.Misuse
	if errors.As(err, &m) {
		return result("SCR_Finalize", err)
	}
	if rt != nil {
		err = errors.Join(err, rt.Finish(ctx(), ""), rt.Close())
	}
	lib, rt = nil, nil
	return result("SCR_Finalize", err)
}

//export ckptscr_finalize_coordinator
func ckptscr_finalize_coordinator() C.int {
	mu.Lock()
	defer mu.Unlock()
	if coord == nil {
		return ok
	}
	err := coord.Wait(time.Minute)
	coord = nil
	return result("SCR_Finalize", err)
}

//export ckptscr_route_file
func ckptscr_route_file(name *C.char, file *C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	if disabled {
		return failed
	}
	if name == nil || file == nil {
		return failed
	}
	n := C.GoString(name)
	if lib == nil {
		// Before Init a name is routed to itself, as outside a phase.
		if n == "" {
			return failed
		}
		return copyOut("SCR_Route_file", n, file)
	}
	p, err := lib.RouteFile(n)
	var m *scr.Misuse
	if err != nil && lib.State() == scr.Restart && !errors.As(err, &m) && !lib.Debug() {
		// Applications ask for files a checkpoint may lack and take the
		// failure as the answer (SCR's own tests do): said under
		// SCR_DEBUG only.
		return failed
	}
	if rc := result("SCR_Route_file", err); rc != ok {
		return rc
	}
	return copyOut("SCR_Route_file", p, file)
}

//export ckptscr_have_restart
func ckptscr_have_restart(flag *C.int, name *C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready("SCR_Have_restart"); !go_ {
		return rc
	}
	n, have, err := lib.HaveRestart(ctx())
	if flag != nil {
		*flag = 0
		if have {
			*flag = 1
		}
	}
	if rc := result("SCR_Have_restart", err); rc != ok {
		return rc
	}
	if !have {
		n = ""
	}
	return copyOut("SCR_Have_restart", n, name)
}

//export ckptscr_start_restart
func ckptscr_start_restart(name *C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready("SCR_Start_restart"); !go_ {
		return rc
	}
	n, err := lib.StartRestart()
	if rc := result("SCR_Start_restart", err); rc != ok {
		return rc
	}
	return copyOut("SCR_Start_restart", n, name)
}

//export ckptscr_complete_restart
func ckptscr_complete_restart(valid C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready("SCR_Complete_restart"); !go_ {
		return rc
	}
	good, err := lib.CompleteRestart(ctx(), valid != 0)
	if rc := result("SCR_Complete_restart", err); rc != ok {
		return rc
	}
	if !good {
		return failed
	}
	return ok
}

//export ckptscr_need_checkpoint
func ckptscr_need_checkpoint(flag *C.int) C.int {
	return flagCall("SCR_Need_checkpoint", flag, func() (bool, error) { return lib.NeedCheckpoint(ctx()) })
}

//export ckptscr_should_exit
func ckptscr_should_exit(flag *C.int) C.int {
	return flagCall("SCR_Should_exit", flag, func() (bool, error) { return lib.ShouldExit() })
}

// flagCall runs one of the calls that answer with a flag (lib is read
// when f runs, under mu).
func flagCall(call string, flag *C.int, f func() (bool, error)) C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready(call); !go_ {
		return rc
	}
	yes, err := f()
	*flag = 0
	if yes {
		*flag = 1
	}
	return result(call, err)
}

// phaseCall names the call the application made: its output form, or
// its checkpoint form when checkpoint is set.
func phaseCall(checkpoint C.int, output, ckpt string) string {
	if checkpoint != 0 {
		return ckpt
	}
	return output
}

// ckptscr_start_output opens a dataset; checkpoint says the application
// called SCR_Start_checkpoint (its state is CHECKPOINT).
//
//export ckptscr_start_output
func ckptscr_start_output(name *C.char, flags C.int, checkpoint C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	call := phaseCall(checkpoint, "SCR_Start_output", "SCR_Start_checkpoint")
	if rc, go_ := ready(call); !go_ {
		return rc
	}
	n := ""
	if name != nil {
		n = C.GoString(name)
	}
	return result(call, lib.StartOutput(ctx(), call, n, int(flags)))
}

// ckptscr_complete_output ends the open dataset; any_files says whether
// some rank routed a file in it (the C layer learned it with valid).
//
//export ckptscr_complete_output
func ckptscr_complete_output(valid C.int, checkpoint C.int, anyFiles C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	call := phaseCall(checkpoint, "SCR_Complete_output", "SCR_Complete_checkpoint")
	if rc, go_ := ready(call); !go_ {
		return rc
	}
	good, err := lib.CompleteOutput(ctx(), call, valid != 0, anyFiles != 0)
	if rc := result(call, err); rc != ok {
		return rc
	}
	if !good {
		return failed
	}
	return ok
}

// named runs one of the calls that take a dataset name.
func named(call string, name *C.char, f func(string) error) C.int {
	mu.Lock()
	defer mu.Unlock()
	if rc, go_ := ready(call); !go_ {
		return rc
	}
	if name == nil {
		return result(call, errors.New("NULL name"))
	}
	return result(call, f(C.GoString(name)))
}

//export ckptscr_current
func ckptscr_current(name *C.char) C.int {
	return named("SCR_Current", name, func(n string) error { return lib.Current(ctx(), n) })
}

//export ckptscr_drop
func ckptscr_drop(name *C.char) C.int {
	return named("SCR_Drop", name, func(n string) error { return lib.Drop(ctx(), n) })
}

//export ckptscr_delete
func ckptscr_delete(name *C.char) C.int {
	return named("SCR_Delete", name, func(n string) error { return lib.Delete(ctx(), n) })
}

//export ckptscr_enabled
func ckptscr_enabled() C.int {
	mu.Lock()
	defer mu.Unlock()
	if disabled {
		return 0
	}
	return 1
}

// ckptscr_identity is the rank and size the C layer works with (see
// scr.Identity); via_ckpt says its collectives go through the
// ckptscr_all_valid, ckptscr_root_answer and ckptscr_same below instead of
// MPI.
//
//export ckptscr_identity
func ckptscr_identity(mpiRank, mpiSize C.int, rnk, size, viaCkpt *C.int) C.int {
	r, s, via, err := scr.Identity(int(mpiRank), int(mpiSize), os.LookupEnv)
	if err != nil {
		return result("SCR_Init", err)
	}
	*rnk, *size, *viaCkpt = C.int(r), C.int(s), 0
	if via {
		*viaCkpt = 1
	}
	return ok
}

// ckptscr_all_valid is the AND of valid over every rank, and whether
// any rank's files count is not zero.
//
//export ckptscr_all_valid
func ckptscr_all_valid(valid, files C.int, out, anyFiles *C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	*out, *anyFiles = valid, 1
	if lib == nil {
		return ok
	}
	all, any, err := lib.AllValid(ctx(), valid != 0, int(files))
	*out, *anyFiles = 0, 0
	if all {
		*out = 1
	}
	if any || err != nil {
		*anyFiles = 1
	}
	return result("SCR", err)
}

// ckptscr_root_answer hands every rank rank 0's flag and the worst of
// the ranks' return codes rc.
//
//export ckptscr_root_answer
func ckptscr_root_answer(rc C.int, flag, worst *C.int) C.int {
	mu.Lock()
	defer mu.Unlock()
	*worst = rc
	if lib == nil {
		return ok
	}
	w, f, err := lib.RootAnswer(ctx(), int(rc), int(*flag))
	*worst, *flag = C.int(w), C.int(f)
	return result("SCR", err)
}

//export ckptscr_same
func ckptscr_same(call, what, s *C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	if lib == nil {
		return ok
	}
	str := ""
	if s != nil {
		str = C.GoString(s)
	}
	return result(C.GoString(call), lib.Same(ctx(), C.GoString(call), C.GoString(what), str))
}

// ckptscr_init_abandon undoes this rank's part of an SCR_Init that failed
// on another rank, so that every rank is uninitialized alike.
//
//export ckptscr_init_abandon
func ckptscr_init_abandon() {
	mu.Lock()
	defer mu.Unlock()
	if lib != nil {
		lib.Close()
	}
	if rt != nil {
		rt.Close()
	}
	if coord != nil {
		coord.Close()
	}
	lib, rt, coord, started = nil, nil, nil, false
}
