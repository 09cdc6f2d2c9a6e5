// Package inject generates the failure schedules of ckpt's fault injector
// (ckpt run --inject-mtti D [--inject-dist exp|weibull:SHAPE]
// [--inject-kind rank|node] [--seed S]). It is pure: no I/O, no clock, and
// its only randomness comes from the seed. The launcher (internal/launch)
// does the killing.
//
// # Model
//
// Failures arrive one after another with independent, identically
// distributed times between them, whose mean is the MTTI: exponential (a
// Poisson process; its standard deviation equals its mean, the "100 % of
// deviation" of the injector of 003 §4) or Weibull of shape k, scaled so
// that its mean is still the MTTI (λ = MTTI / Γ(1 + 1/k); Dist.Scale). A
// shape below 1 clusters failures, above 1 spaces them more evenly; shape 1
// is the exponential (and gives the very same schedule). Each failure kills
// one target chosen uniformly among the live ones: a rank's process
// (--inject-kind rank), or a whole node, its ranks and its node-local cache
// (node). 003's injector picks its target machines round-robin; here the
// choice is uniform, as for independent failures of identical nodes, so the
// same target may be hit twice in a row.
//
// # Job time
//
// Event times are job time: the job's wall clock from the start of its
// first launch, running through its launches and the gaps between them
// (tearing down a failed launch, choosing the checkpoint, starting the
// processes again) alike. That is the clock of the models the demo compares
// with: Daly's run time (000 eq. 1), Fialho et al.'s overhead (003 eq. 10)
// and the Markov model let failures strike at their rate during
// computation, checkpoints and restarts, and a restart runs from the
// failure to the restored state, gap included. So the launcher fires event
// e at e.Delay(now), now the job time; an event due while no launch runs
// (there is no application to kill then) fires as soon as the next launch
// is up, and the count of failures injected over a job of length T is
// Poisson with mean T/MTTI (rate_test.go checks it on a simulated job).
//
// The MTTI given here is thus Daly's M (000 eq. 2), and the policy
// package's MTTI estimate from failures and run time converges to it.
//
// # Reproducibility
//
// A Schedule draws from two PCG generators of math/rand/v2 seeded with
// (Seed, a fixed stream number): one for the times, one for the targets, so
// the times do not depend on the live counts passed to Next. Samples are
// made here from the generators' raw 64-bit output (inverse transform for
// the times, Lemire's unbiased multiply-and-reject for the targets), never
// through rand.Rand's methods, whose algorithms math/rand/v2 does not
// promise to keep. Given the seed, the event sequence is therefore the same
// in every run and with every Go release that keeps PCG's output (which is
// specified) and math.Log and math.Pow (which may in principle differ in the
// last bit across architectures, moving an event by a nanosecond).
package inject
