package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// trailerPrefix starts the last line of an encoded manifest, which carries
// the hash of everything before it.
const trailerPrefix = "xxh3-128 "

// trailerLen is the length of the trailer line including its newline.
const trailerLen = len(trailerPrefix) + 2*HashSize + 1

type wireFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Hash Hash   `json:"hash"`
	// A compressed file's stored form; absent for a file stored as
	// written, so manifests from before compression read unchanged.
	Codec      string `json:"codec,omitempty"`
	Filter     string `json:"filter,omitempty"`
	StoredSize *int64 `json:"stored_size,omitempty"`
	StoredHash *Hash  `json:"stored_hash,omitempty"`
}

type wirePart struct {
	Rank   int        `json:"rank"`
	Node   string     `json:"node"`
	Set    int        `json:"set"`
	Member int        `json:"member"`
	Files  []wireFile `json:"files,omitempty"`
	Parity []wireFile `json:"parity,omitempty"`
}

type wireManifest struct {
	Version int        `json:"version"`
	Name    string     `json:"name"`
	ID      uint64     `json:"id"`
	Created time.Time  `json:"created"`
	Ranks   int        `json:"ranks"`
	Scheme  string     `json:"scheme"`
	N       int        `json:"n"`
	M       int        `json:"m"`
	Level   Level      `json:"level"`
	Sets    [][]int    `json:"sets"`
	Parts   []wirePart `json:"parts"`
}

// Encode returns the text form of a valid manifest: a JSON object (header
// fields one per line, then one line per set and one line per part) followed
// by the line "xxh3-128 <hex>" carrying the XXH3-128 of the JSON text
// including its final newline. The output depends only on the manifest, and
// Decode accepts it back unchanged. Encode fails if m.Validate does.
func Encode(m *Manifest) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	body, err := encodeBody(m)
	if err != nil {
		return nil, err
	}
	return seal(body), nil
}

// seal appends the trailer line for body.
func seal(body []byte) []byte {
	h := HashBytes(body)
	out := make([]byte, 0, len(body)+trailerLen)
	out = append(out, body...)
	out = append(out, trailerPrefix...)
	out = append(out, h.String()...)
	return append(out, '\n')
}

// encodeBody writes the canonical JSON text of m.
func encodeBody(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// value writes v compactly; json.Encoder appends a newline, dropped.
	value := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	field := func(name string, v any) error {
		fmt.Fprintf(&buf, "  %q: ", name)
		if err := value(v); err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		buf.WriteString(",\n")
		return nil
	}
	list := func(name string, n int, item func(i int) any, last bool) error {
		fmt.Fprintf(&buf, "  %q: [", name)
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString("\n    ")
			if err := value(item(i)); err != nil {
				return fmt.Errorf("encode %s %d: %w", name, i, err)
			}
		}
		if n > 0 {
			buf.WriteString("\n  ")
		}
		buf.WriteString("]")
		if !last {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		return nil
	}
	buf.WriteString("{\n")
	for _, f := range []struct {
		name string
		v    any
	}{
		{"version", m.Version},
		{"name", m.Name},
		{"id", m.ID},
		{"created", m.Created.UTC()},
		{"ranks", m.Ranks},
		{"scheme", m.Scheme},
		{"n", m.SetSize},
		{"m", m.M},
		{"level", m.Level},
	} {
		if err := field(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if err := list("sets", len(m.Sets), func(i int) any { return m.Sets[i] }, false); err != nil {
		return nil, err
	}
	err := list("parts", len(m.Parts), func(i int) any {
		p := &m.Parts[i]
		return wirePart{Rank: p.Rank, Node: p.Node, Set: p.Set, Member: p.Member,
			Files: toWire(p.Files), Parity: toWire(p.Parity)}
	}, true)
	if err != nil {
		return nil, err
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

func toWire(files []File) []wireFile {
	if len(files) == 0 {
		return nil
	}
	out := make([]wireFile, len(files))
	for i, f := range files {
		out[i] = wireFile{Name: f.Name, Size: f.Size, Hash: f.Hash}
		if f.Codec != "" {
			out[i].Codec, out[i].Filter = f.Codec, f.Filter
			out[i].StoredSize, out[i].StoredHash = &f.StoredSize, &f.StoredHash
		}
	}
	return out
}

func fromWire(rank int, files []wireFile) []File {
	if len(files) == 0 {
		return nil
	}
	out := make([]File, len(files))
	for i, f := range files {
		out[i] = File{Rank: rank, Name: f.Name, Size: f.Size, Hash: f.Hash, Codec: f.Codec, Filter: f.Filter}
		if f.StoredSize != nil {
			out[i].StoredSize = *f.StoredSize
		}
		if f.StoredHash != nil {
			out[i].StoredHash = *f.StoredHash
		}
	}
	return out
}

// Decode parses and checks the text form written by Encode. In order it
// checks the trailer line and the hash of the body (a mismatch wraps
// ErrCorrupt), the format version (ErrVersion), the JSON (unknown fields,
// wrong types and trailing data are errors), every rule of Manifest.Validate
// (ErrInvalid), and finally that the text is exactly what Encode would write
// for the result (ErrInvalid), so every manifest has one text form. Errors
// name what is wrong and never span more than one line. Decode never panics.
//
// The result has Created in UTC and nil (not empty) file lists; Encode of it
// returns data.
func Decode(data []byte) (*Manifest, error) {
	body, err := unseal(data)
	if err != nil {
		return nil, err
	}
	// Decode strictly; on failure, or without a usable version, look at the
	// version alone so that a manifest of another version is reported as
	// such rather than as unknown fields.
	var w wireManifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(&w)
	if err != nil || w.Version != Version {
		if verr := checkVersion(body); verr != nil {
			return nil, verr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, oneLine(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalid)
	}
	m := &Manifest{
		Version: w.Version,
		Meta: Meta{Name: w.Name, ID: w.ID, Created: w.Created.UTC(), Ranks: w.Ranks,
			Scheme: w.Scheme, SetSize: w.N, M: w.M, Sets: w.Sets, Level: w.Level},
		Parts: make([]Part, len(w.Parts)),
	}
	for i, p := range w.Parts {
		m.Parts[i] = Part{Rank: p.Rank, Node: p.Node, Set: p.Set, Member: p.Member,
			Files: fromWire(p.Rank, p.Files), Parity: fromWire(p.Rank, p.Parity)}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	canon, err := encodeBody(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, oneLine(err))
	}
	if !bytes.Equal(canon, body) {
		i := 0
		for i < len(canon) && i < len(body) && canon[i] == body[i] {
			i++
		}
		line := bytes.Count(body[:i], []byte{'\n'}) + 1
		return nil, fmt.Errorf("%w: not in canonical form (line %d differs from what Encode writes)", ErrInvalid, line)
	}
	return m, nil
}

// checkVersion returns an error if body is a JSON object whose version field
// is missing or not Version, and nil otherwise (including when body is not
// JSON at all, which the strict decoder reports).
func checkVersion(body []byte) error {
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&probe); err != nil {
		return nil
	}
	if probe.Version == nil {
		return fmt.Errorf("%w: no version field", ErrInvalid)
	}
	if *probe.Version != Version {
		return fmt.Errorf("%w %d, this build reads version %d", ErrVersion, *probe.Version, Version)
	}
	return nil
}

// unseal splits off and checks the trailer line and returns the body.
func unseal(data []byte) ([]byte, error) {
	if len(data) < trailerLen || data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%w: manifest of %d bytes has no checksum line (truncated?)", ErrCorrupt, len(data))
	}
	cut := len(data) - trailerLen
	body, trailer := data[:cut], data[cut:]
	if !bytes.HasPrefix(trailer, []byte(trailerPrefix)) || (cut > 0 && body[cut-1] != '\n') {
		return nil, fmt.Errorf("%w: last line is not %q followed by the hash (truncated?)", ErrCorrupt, trailerPrefix+"<hex>")
	}
	want, err := ParseHash(string(trailer[len(trailerPrefix) : trailerLen-1]))
	if err != nil {
		return nil, fmt.Errorf("%w: checksum line: %v", ErrCorrupt, err)
	}
	if got := HashBytes(body); got != want {
		return nil, fmt.Errorf("%w: manifest checksum %s does not match its content (%s)", ErrCorrupt, want, got)
	}
	return body, nil
}

// oneLine flattens an error message onto one line.
func oneLine(err error) string {
	return string(bytes.ReplaceAll([]byte(err.Error()), []byte{'\n'}, []byte{' '}))
}
