package model

// Scheme is a multi-level checkpointing scheme as the Markov models see
// it: blocking at any number of levels (Moody et al.; docs/MODELS.md), with
// Options, or non-blocking at two (Sato et al. 2012, §V): the top level
// copied in the background for FlushLatency seconds, slowing computation by
// (1 + Alpha) meanwhile.
type Scheme struct {
	Levels
	NonBlocking         bool
	FlushLatency, Alpha float64 // NonBlocking
	Options             BlockingOptions
}

// Evaluate evaluates the scheme's model at the schedule.
func (s Scheme) Evaluate(sched Schedule) (MultilevelResult, error) {
	if s.NonBlocking {
		return NonBlocking{Levels: s.Levels, FlushLatency: s.FlushLatency, Alpha: s.Alpha, RetryRecovery: s.Options.RetryRecovery}.Evaluate(sched)
	}
	return Blocking(s.Levels, sched, s.Options)
}

// Optimize finds the schedule (interval and counts) of the highest
// efficiency.
func (s Scheme) Optimize() (MultilevelResult, error) {
	if s.NonBlocking {
		return NonBlocking{Levels: s.Levels, FlushLatency: s.FlushLatency, Alpha: s.Alpha, RetryRecovery: s.Options.RetryRecovery}.Optimize()
	}
	return OptimizeBlocking(s.Levels, s.Options)
}
