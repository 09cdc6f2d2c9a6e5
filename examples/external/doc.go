// Package ckptexternal shows that a program outside the ckpt module can
// plug in its own pieces: a communicator (Comm, here ranks as goroutines
// talking over channels) and a storage tier (a storage.Backend, here a map
// in memory). Its test commits checkpoints across ranks with XOR
// redundancy through them, restarts, and rebuilds after a rank's cache is
// lost. It is a module of its own so that it can use nothing but the
// public API: internal packages of ckpt are out of its reach.
package ckptexternal
