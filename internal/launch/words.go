package launch

import (
	"fmt"
	"strings"
)

// SplitWords splits s into words as a POSIX shell does, without expanding
// anything: blanks separate words; 'single quotes' keep everything;
// "double quotes" keep everything but \", \\, \$ and \` (the backslash
// escapes them); a backslash outside quotes keeps the next character.
// ckpt run --launcher-args is read this way.
func SplitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in := false // a word is open (even an empty one, '')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%q: a backslash at the end escapes nothing", s)
			}
			i++
			w.WriteByte(s[i])
			in = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%q: a single quote is not closed", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("%q: a double quote is not closed", s)
			}
			in = true
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
