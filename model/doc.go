// Package model holds the closed-form and Markov models that say how often
// to checkpoint and what checkpointing costs: pure functions of their
// inputs, in seconds and bytes, with no I/O.
//
// # The models
//
//   - The optimal interval of a single-level checkpoint: Young, Gropp–Lusk,
//     Daly's first-order and higher-order formulas, and Fialho's serial and
//     parallel overhead models with the dependency factor φ (Phi, from a
//     DependencyGraph); OptimalInterval chooses among them by Method.
//   - The expected run time of a job that checkpoints at an interval
//     (DalyRuntime, YoungRuntime, GroppLuskRuntime, FialhoRuntime).
//   - Oldfield's overhead model of checkpointing to a parallel file system,
//     with its LWFS and overlay variants, for the systems of its Table 1
//     (Oldfield, LookupMPPSystem).
//   - The Checkpoint-Fill-Time Law (FillTime, LookupFillTimeSystem).
//   - The multi-level Markov model of Sato et al. (Levels, Schedule):
//     Blocking and NonBlocking evaluate the efficiency of a schedule of
//     node-local and shared-tier checkpoints; OptimizeBlocking and
//     NonBlocking.Optimize find the interval and the number of node-local
//     checkpoints per shared-tier checkpoint that maximise it.
//
// Every model is checked in its tests against the tables and figures of
// its paper, and against the simulator (package sim).
//
// # Errors
//
// An input outside a model's domain is a *ParamError naming the parameter
// as the command line and the system files call it (for example "cost" or
// "mtti"), so that a front end can point at the flag or field that is wrong.
//
// # Who uses it
//
// `ckpt model ...` (cmd/ckpt) puts every model on the command line; the
// planner (internal/plan, `ckpt plan`) optimises each alternative with the
// multi-level model; the checkpoint policy (internal/policy) and the
// simulator (package sim) take their intervals from it; internal/figures
// redraws the papers' figures with it. The package is public so that a
// program can use the models directly.
package model
