//go:build !linux

package netns

import (
	"context"
	"errors"
	"net"
)

var errLinux = errors.New("netns: network namespaces are Linux's")

func probe() string { return "needs Linux (network namespaces)" }

// Do fails: network namespaces are Linux's.
func Do(path string, fn func() error) error { return errLinux }

// Listen fails: network namespaces are Linux's.
func (h *Host) Listen(network, addr string) (net.Listener, error) { return nil, errLinux }

// DialContext fails: network namespaces are Linux's.
func (h *Host) DialContext(ctx context.Context, addr string) (net.Conn, error) { return nil, errLinux }
