//go:build !linux

package tcplock

import "errors"

// NFT is the Locker of nftables, on Linux only.
type NFT struct{ Table string }

var errNoNFT = errors.New("tcplock: nftables: Linux only")

func (NFT) Lock([]Conn) error { return errNoNFT }
func (NFT) Unlock() error     { return errNoNFT }
