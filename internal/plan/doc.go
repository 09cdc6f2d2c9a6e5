// Package plan is the planner behind `ckpt plan`: given a machine and a job
// (a System: nodes, memory per node, the node-local and shared tiers'
// bandwidths, staging nodes, failure categories with their rates), it
// answers how to checkpoint them.
//
// Its one job is to enumerate the ways the system could checkpoint
// (Alternatives: which levels, which node-local redundancy scheme, which
// failure domain the redundancy sets are spread over, blocking or
// non-blocking flushes to the shared tier), optimise the interval and the
// number of node-local checkpoints per shared-tier checkpoint of each with
// the multi-level model of package model, and recommend one (Plan): the
// most efficient, or among those within a small tie of it the simplest.
// With Options.TargetEfficiency it also answers what shared-tier bandwidth
// the recommended configuration would need to reach that efficiency
// (Sato et al. 2012, Fig. 15).
//
// Load reads a system file (YAML, docs/PLANNING.md); the built-in systems
// live in examples/systems. The package does no I/O beyond reading what it
// is given, and runs the optimisations of the alternatives concurrently
// (Options.Workers). Its only caller is cmd/ckpt (plan.go).
package plan
