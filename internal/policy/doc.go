// Package policy makes the collective checkpoint decision behind the rank
// API's NeedCheckpoint(step): every rank asks at every step and every rank
// must get the same answer. The package is pure: no I/O, no clock (times are
// passed in as offsets on the caller's monotonic clock), no randomness.
//
// # Terms
//
// A step is the application's iteration counter: NeedCheckpoint(step) is
// called after step steps are done, and a checkpoint taken then holds the
// state after step steps. A launch is one run of the job's processes; after
// a failure the launcher relaunches from a checkpoint, at its step.
//
// A decision step is a step at which every rank takes part in a decide
// collective: each sends a Report (a few dozen bytes), the coordinator
// computes one Decision from all of them with Decide, and every rank
// receives it. Between decision steps a rank answers "no" from its Local
// alone, without any I/O. A Decision says whether to checkpoint at this
// step, whether to stop after it, and the next decision step.
//
// # Policies (Parse, the --interval forms)
//
//	none       never checkpoint; no decision rounds at all
//	100steps   checkpoint at every multiple of 100 steps; rounds only there
//	30s, 5m    checkpoint when that much wall time has passed since the last
//	           checkpoint ended
//	auto       Daly's optimal interval (000 eq. 2, model.Daly) for the
//	           checkpoint cost ckpt measured itself and the MTTI estimated
//	           from the failures seen (EstimateMTTI)
//	auto:6h    the same with a known MTTI
//
// Time and Auto hold decision rounds about every DecisionPeriod of wall time
// (1 s by default), sooner when a checkpoint falls due sooner: the next
// decision step is predicted from the measured step time. The step after a
// checkpoint is a decision step too, so that the checkpoint's cost reaches
// the coordinator at once and survives a failure soon after it. A job of 10⁶
// steps of 1 ms holds about a thousand rounds, not a million. A halt request
// (Local.RequestHalt) is seen at the next round: within a DecisionPeriod or
// so for Time and Auto, at the next multiple for Steps, never for None.
//
// Time and Auto take the slowest rank's view (largest elapsed times, step
// time and checkpoint cost), so a checkpoint is never late because of a fast
// rank. The interval is compute time: it runs from the end of one checkpoint
// to the start of the next, as τ does in Daly's model. Auto re-evaluates it
// at every round, so a changed checkpoint cost or a longer failure-free run
// moves it.
//
// # Obligations of the driver
//
//  1. Every rank builds its Local with NewLocal from the same Policy and the
//     same start step, so all agree on the first decision step.
//  2. At every step a rank calls Local.Need(step). When it is true, and only
//     then, it calls Local.Report(step, now), takes part in the decide
//     collective with the encoded report (Report.MarshalBinary), and calls
//     Local.Apply with the answer.
//  3. The coordinator decodes every rank's report, checks them with
//     CheckReports (a failure is a protocol error), calls Decide once with
//     the policy and its State, keeps the new State, and sends the encoded
//     Decision to every rank.
//  4. When a decision says Checkpoint, every rank checkpoints at that step
//     and then calls Local.Checkpointed(start, end); when it says Halt, every
//     rank stops after that step (and after the checkpoint).
//  5. The launcher keeps the State across launches: it starts the next
//     launch's coordinator with State.NextLaunch(ran, failed), which carries
//     the measured cost and the failure history that Auto's MTTI estimate
//     needs.
//
// # Encoding
//
// Report and Decision implement encoding.BinaryMarshaler, BinaryAppender and
// BinaryUnmarshaler with a compact, strict form (see codec.go): at most
// MaxReportSize and MaxDecisionSize bytes, one encoding per value, and
// decoders that never panic and report errors wrapping ErrCorrupt.
package policy
