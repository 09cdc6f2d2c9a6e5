// Package transfer holds the two ways a flush's bytes reach the shared
// tier, behind the one lifecycle of flush.Transfer: Blocking, the ranks
// copying their own files (Moody et al. 2010's flush, engine.Engine.Flush),
// and Staged, a staging server pulling them while the application computes
// (Sato et al. 2012's non-blocking flush, internal/stage).
package transfer
