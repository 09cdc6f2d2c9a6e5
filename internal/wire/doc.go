// Package wire is the encoding of the coordinator protocol (docs/RUNTIME.md):
// the messages that ranks, sub-coordinators (relays) and the coordinator
// exchange, their binary form, and the framing that carries them over a
// byte stream. It does no I/O of its own: ReadFrame and WriteFrame work on
// the io.Reader and io.Writer they are given.
//
// # Frames
//
// A frame is a 4-byte little-endian payload length, a 1-byte message Type
// and the payload. The length counts the payload only, so a frame is
// HeaderSize+length bytes. A reader refuses a frame whose length exceeds its
// limit before reading the payload (ErrTooLarge); the stream is then out of
// step and the connection must be closed. The framing is internal/framing's,
// which the staging protocol (internal/stage) shares. DefaultLimit (1 MiB) suits
// requests; results of all-gathers grow with the job and get a larger limit
// chosen by the driver.
//
// # Payloads
//
// Unsigned integers (sequence numbers, request ids, incarnations) are
// unsigned varints; ranks, sizes and counts are unsigned varints at most
// math.MaxInt32; strings and byte slices are a uvarint length followed by the
// bytes; booleans and enumerations are one byte. The encoding is canonical:
// varints are minimal, booleans are 0 or 1, enumerations are known values,
// nothing trails the last field. Decode rejects anything else, so every
// frame it accepts re-encodes to the same bytes, and the fuzz tests check
// exactly that.
//
// # Limits
//
// Decoders never trust a length: every count and length is checked against
// the bytes that remain (a slice of n elements needs at least n bytes) and
// against the field's limit (MaxKey, MaxValue, MaxToken, MaxNode, MaxReason)
// before anything is allocated, so a hostile frame costs at most a small
// multiple of its own size. Append checks the same limits, so every message
// it encodes decodes.
//
// # Memory
//
// Byte slices in a decoded message (contribution data, values, result data)
// alias the frame passed to Decode; strings are copied. ReadFrame allocates
// a fresh buffer per frame, so its messages may be kept. Messages handed to
// Append are only read.
package wire
