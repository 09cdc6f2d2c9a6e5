package wire

import (
	"fmt"
	"unicode/utf8"
)

// A vote is a rank's contribution to a Commit collective: one byte (1 if
// the rank committed checkpoint name, 0 if it failed to) followed by the
// name. The coordinator records the checkpoint as committed when every rank
// voted 1 for the same non-empty name.

// AppendVote appends a vote for the checkpoint name to b.
func AppendVote(b []byte, name string, ok bool) []byte {
	if ok {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return append(b, name...)
}

// ParseVote parses a vote made by AppendVote.
func ParseVote(b []byte) (name string, ok bool, err error) {
	if len(b) == 0 {
		return "", false, fmt.Errorf("wire: %w: empty vote", ErrMalformed)
	}
	if b[0] > 1 {
		return "", false, fmt.Errorf("wire: %w: vote byte %d is neither 0 nor 1", ErrMalformed, b[0])
	}
	if len(b)-1 > MaxKey || !utf8.Valid(b[1:]) {
		return "", false, fmt.Errorf("wire: %w: vote names no valid checkpoint", ErrMalformed)
	}
	return string(b[1:]), b[0] == 1, nil
}
