package scr

import "fmt"

// State is where a rank is in SCR's state machine.
type State int

// SCR's states (SCR 3.1 src/scr.c): UNINIT until SCR_Init, IDLE between
// phases, and one state per open phase.
const (
	Uninit State = iota
	Idle
	Output     // between SCR_Start_output and SCR_Complete_output
	Checkpoint // between SCR_Start_checkpoint and SCR_Complete_checkpoint
	Restart    // between SCR_Start_restart and SCR_Complete_restart
)

func (s State) String() string {
	switch s {
	case Uninit:
		return "UNINIT"
	case Idle:
		return "IDLE"
	case Output:
		return "OUTPUT"
	case Checkpoint:
		return "CHECKPOINT"
	case Restart:
		return "RESTART"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Misuse is an error SCR aborts the job on: the C layer prints
// "SCR_<Call>: <What>" and calls MPI_Abort.
type Misuse struct {
	Call string // "SCR_Start_restart"
	What string
}

func (m *Misuse) Error() string { return m.Call + ": " + m.What }

func misuse(call, format string, args ...any) error {
	return &Misuse{Call: call, What: fmt.Sprintf(format, args...)}
}

// want is the state each call must be made in.
var want = map[string]State{
	"SCR_Init":                Uninit,
	"SCR_Finalize":            Idle,
	"SCR_Have_restart":        Idle,
	"SCR_Start_restart":       Idle,
	"SCR_Complete_restart":    Restart,
	"SCR_Need_checkpoint":     Idle,
	"SCR_Start_checkpoint":    Idle,
	"SCR_Complete_checkpoint": Checkpoint,
	"SCR_Start_output":        Idle,
	"SCR_Complete_output":     Output,
	"SCR_Current":             Idle,
	"SCR_Drop":                Idle,
	"SCR_Delete":              Idle,
	"SCR_Should_exit":         Idle,
}

// opener is the call that opens each phase, and closer the one that ends it.
var opener = map[State]string{Output: "SCR_Start_output", Checkpoint: "SCR_Start_checkpoint", Restart: "SCR_Start_restart"}
var closer = map[State]string{Output: "SCR_Complete_output", Checkpoint: "SCR_Complete_checkpoint", Restart: "SCR_Complete_restart"}

// Check says whether call may be made in state s: nil, or the Misuse that
// names what the application must call first.
func Check(call string, s State) error {
	w, ok := want[call]
	if !ok {
		return misuse(call, "not a call of the state machine")
	}
	if s == w {
		return nil
	}
	switch {
	case s == Uninit:
		return misuse(call, "Must call SCR_Init() before %s()", call)
	case w == Uninit:
		return misuse(call, "SCR_Init() was already called (state %s)", s)
	case w == Idle:
		return misuse(call, "Must call %s() before %s() (state %s)", closer[s], call, s)
	default: // a Complete_* outside its phase
		return misuse(call, "Must call %s() before %s() (state %s)", opener[w], call, s)
	}
}
