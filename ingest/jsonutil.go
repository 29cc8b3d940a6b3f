package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxJSONSize bounds JSON inputs: they are decoded into generic values,
// which take several times their size in memory. Real nccl-tests -J and
// nvbandwidth -j files are well under a megabyte.
const maxJSONSize = 16 << 20

// decodeJSON decodes data into a generic value with file:line errors.
func decodeJSON(name string, data []byte) (any, error) {
	if len(data) > maxJSONSize {
		return nil, fmt.Errorf("calibrate: %s: JSON input of %d bytes is above the %d-byte limit: %w", name, len(data), maxJSONSize, ErrTooLarge)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		off := int(dec.InputOffset())
		var se *json.SyntaxError
		if ok := asSyntax(err, &se); ok {
			off = int(se.Offset)
		}
		return nil, errNoData(name, lineAt(data, off), "invalid JSON: %v", err)
	}
	return v, nil
}

func asSyntax(err error, se **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*se = s
	}
	return ok
}

// normKey folds a JSON key for tolerant lookup: lower case, without '_', '-', ' ' and '#'.
func normKey(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		switch r {
		case '_', '-', ' ', '#':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jget returns m's value for the first of names present (compared with normKey).
func jget(v any, names ...string) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	for _, n := range names {
		if x, ok := m[n]; ok {
			return x, true
		}
	}
	for k, x := range m {
		nk := normKey(k)
		for _, n := range names {
			if nk == normKey(n) {
				return x, true
			}
		}
	}
	return nil, false
}

// jnum reads a number (JSON number or numeric string); ok is false for
// null, "nan", "N/A" and non-numbers.
func jnum(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// jint reads an integer.
func jint(v any) (int64, bool) {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i, true
		}
	}
	if s, ok := v.(string); ok {
		if i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return i, true
		}
	}
	f, ok := jnum(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// jstr reads a string or a number as text.
func jstr(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// jlist reads an array.
func jlist(v any) []any {
	l, _ := v.([]any)
	return l
}

// firstJSONChar returns the first non-space byte of b (0 if none).
func firstJSONChar(b []byte) byte {
	t := bytes.TrimLeft(b, " \t\r\n\ufeff")
	t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf"))
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// keyLines returns the line numbers of successive occurrences of a quoted
// key in data, starting at from (a best-effort way to give JSON records a line).
func keyLines(data []byte, from int, key string, n int) []int {
	pat := []byte(`"` + key + `"`)
	var out []int
	off := max(from, 0)
	for len(out) < n && off < len(data) {
		i := bytes.Index(data[off:], pat)
		if i < 0 {
			break
		}
		off += i
		out = append(out, lineAt(data, off))
		off += len(pat)
	}
	return out
}
