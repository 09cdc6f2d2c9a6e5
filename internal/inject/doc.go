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
// Event times are job time: the running time of the job summed over its
// launches, from the start of the first. The time between a launch's end
// and the next launch's start (tearing down, choosing the checkpoint,
// starting processes) does not count, because there is no application to
// kill then; restart work done by the new processes (reading the
// checkpoint) does count, as Daly's model also lets failures strike during
// a restart. A launch ended by an injected failure consumes job time up to
// that failure's At exactly, whatever its teardown took; a launch that ends
// otherwise consumes its running time. So the launcher keeps base, the job
// time at which the current launch started, and fires event e at
// e.Delay(base) after the launch started. An event whose time has already
// passed (two failures closer together than a launch's start) fires as soon
// as the launch is up.
//
// Counting only running time keeps the injected rate equal to the rate the
// application sees: the MTTI given here is Daly's M (000 eq. 2), and the
// policy package's MTTI estimate from failures and run time converges to it.
// 003's injector runs on the application's wall clock; while the
// application runs the two agree.
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
