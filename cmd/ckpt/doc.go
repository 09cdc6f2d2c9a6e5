// Command ckpt runs, inspects and plans checkpointed parallel jobs: `ckpt
// run` launches a job and relaunches it from its best recoverable
// checkpoint after a failure; `ckpt ls`, `inspect`, `verify`, `status`,
// `checkpoint` and `halt` look at and steer jobs and their checkpoints;
// `ckpt stage` runs a staging server; `ckpt model`, `plan`, `simulate` and
// `bench` answer how often to checkpoint and what it costs; `ckpt example`
// runs the example workloads. `ckpt help` lists every command. The command
// parses flags, calls the packages that do the work, and prints their
// results as text or JSON.
package main
