package cli

import (
	"errors"
	"strings"
)

// splitArgs splits s into words the way a POSIX shell does, without
// expanding anything and without running a shell: blanks separate words;
// inside single quotes every character is literal; inside double quotes a
// backslash escapes only \ " $ and `; elsewhere a backslash escapes the
// next character. Quotes may join parts of one word (--set "A=b c"). An
// unterminated quote or a trailing backslash is an error. It runs in
// time linear in len(s).
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	const (
		plain = iota
		single
		double
	)
	state := plain
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch state {
		case single:
			if r == '\'' {
				state = plain
				continue
			}
			cur.WriteRune(r)
		case double:
			switch r {
			case '"':
				state = plain
			case '\\':
				if i+1 < len(rs) && strings.ContainsRune("\\\"$`", rs[i+1]) {
					i++
					cur.WriteRune(rs[i])
				} else {
					cur.WriteRune(r)
				}
			default:
				cur.WriteRune(r)
			}
		default:
			switch {
			case r == ' ' || r == '\t' || r == '\n' || r == '\r':
				if inWord {
					out = append(out, cur.String())
					cur.Reset()
					inWord = false
				}
			case r == '\'':
				state, inWord = single, true
			case r == '"':
				state, inWord = double, true
			case r == '\\':
				if i+1 >= len(rs) {
					return nil, errors.New("a backslash ends the text")
				}
				i++
				cur.WriteRune(rs[i])
				inWord = true
			default:
				cur.WriteRune(r)
				inWord = true
			}
		}
	}
	switch state {
	case single:
		return nil, errors.New("unterminated single quote")
	case double:
		return nil, errors.New("unterminated double quote")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// listValue is a repeatable string option that keeps every value as given
// (urfave/cli's string slices split values at commas, which --design
// values may contain).
type listValue struct{ vals []string }

// Set appends one value.
func (l *listValue) Set(s string) error {
	l.vals = append(l.vals, s)
	return nil
}

// String joins the values for help output.
func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.vals, " ")
}

// listValues returns the values of a listValue option of c.
func listValues(c interface{ Generic(string) any }, name string) []string {
	if l, ok := c.Generic(name).(*listValue); ok && l != nil {
		return append([]string(nil), l.vals...)
	}
	return nil
}

// Get returns the list (flag.Getter), so that cli.Context.Value can read
// the option: the output checks list every input a command reads.
func (l *listValue) Get() any { return l }
