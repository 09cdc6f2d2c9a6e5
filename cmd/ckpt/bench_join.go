package main

import (
	"context"

	"github.com/ckpt/ckpt"
	"github.com/ckpt/ckpt/internal/bench"
)

// benchJoin joins one rank of `ckpt bench overhead` through the public
// API, the path an application takes.
func benchJoin(ctx context.Context, cfg bench.JoinConfig) (bench.Rank, error) {
	return ckpt.Join(ctx, ckpt.JobOptions{Coord: cfg.Coord, Token: cfg.Token, Interval: cfg.Interval,
		Store: ckpt.Options{Rank: cfg.Rank, Size: cfg.Size, Node: cfg.Node, CacheDir: cfg.CacheDir}})
}
