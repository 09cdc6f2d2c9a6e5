// Package jobenv is the contract between a launcher and the ranks it
// starts: the CKPT_* environment variables, the keys ranks publish for the
// launcher in the coordinator's key–value service and their payloads, and
// the exit statuses that tell the launcher whether a relaunch can help.
//
// Terms:
//
//   - The launcher is `ckpt run` (package launch), or a batch script around
//     `ckpt coordinator`, srun or mpirun. It sets the variables of Env.
//   - A rank is one process of the job; ckpt.Join (through
//     internal/rank) and ckpt.Open read the variables with LookupOnly:
//     those their options leave to the environment, parsed and checked
//     at once (FromEnviron reads them all). Identity adds the rank and
//     size of other launchers (Slurm, Open MPI, PMI) when VarRank and
//     VarSize are unset.
//   - Every variable has a constant here (Var*), documented in Vars, from
//     which docs/RUNTIME.md's table is generated. A test scans the module:
//     every CKPT_ name in its code, strings or comments is one of Vars, and
//     no string literal outside this package is a name or holds NAME=
//     (except the storage foundations' own, package s3's, which cannot
//     import a runtime package).
//
// The package is a leaf of the runtime layer: it imports only the policy
// and units parsers, so that the launcher, the root and cmd can all share it.
package jobenv
