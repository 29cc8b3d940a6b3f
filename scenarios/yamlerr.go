package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// This file turns what the YAML library says into what a person editing
// the file can act on: every error names file:line:column in the file as
// written, says what was wanted in the file's own terms ("want a mapping,
// got a list", not "cannot unmarshal !!seq into model.NICSpec") and names
// the key. All of collsim's YAML inputs (clusters, sweeps, prices,
// workloads) go through parseYAML; decoding a fragment into a struct goes
// through decodeError.

// parseYAML parses a whole YAML document into a node tree: a syntax error
// names file:line (the library reports no column), and a key given twice in
// any mapping, at any depth, is an error naming both places (the library
// keeps the last one silently when building nodes).
func parseYAML(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, data, err)
	}
	if err := duplicateKeys(file, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// syntaxRE is the library's "yaml: line N: problem" or "yaml: problem".
var syntaxRE = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?(.*)$`)

// SplitSyntaxError splits what the YAML library says of a syntax error
// ("yaml: line N: problem", "yaml: problem") into the line, counted from 1
// (syntaxLine; 0 when it cannot say), and the problem.
func SplitSyntaxError(msg string) (line int, problem string) {
	m := syntaxRE.FindStringSubmatch(msg) // matches every string
	line, _ = strconv.Atoi(m[1])
	return syntaxLine(line, m[2]), m[2]
}

// syntaxError is a YAML syntax error as file:line: message, the line
// counted from 1 (SplitSyntaxError); an invalid character, which the
// library reports without a place, at its line and column.
func syntaxError(file string, data []byte, err error) error {
	line, msg := SplitSyntaxError(err.Error())
	if line > 0 {
		if strings.HasPrefix(msg, "found a tab character") {
			// The library names the line of the value it was reading;
			// the tab is in the indentation of that line or one after.
			line = tabIndentLine(data, line)
		}
		if last := lastTextLine(data); line > last && last > 0 {
			// The library read to the end (an open bracket or quote):
			// the last line with text, not the empty one after it.
			line, msg = last, msg+" (at the end of the file)"
		}
		return fmt.Errorf("%s:%d: invalid YAML: %s", file, line, msg)
	}
	if l, c, ok := badCharAt(data); ok && readerProblem(msg) {
		return fmt.Errorf("%s:%d:%d: invalid YAML: %s", file, l, c, msg)
	}
	return fmt.Errorf("%s: invalid YAML: %s", file, msg)
}

// tabIndentLine is the first line from line on (counted from 1) whose
// indentation holds a tab, line itself when none does.
func tabIndentLine(data []byte, line int) int {
	for i, l := range strings.Split(string(data), "\n") {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if i+1 >= line && strings.Contains(indent, "\t") {
			return i + 1
		}
	}
	return line
}

// lastTextLine is the number of the last line of data that holds more than
// blanks, counted from 1 (0 when none does).
func lastTextLine(data []byte) int {
	last := 0
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			last = i + 1
		}
	}
	return last
}

// syntaxLine returns the line, counted from 1, of a syntax error the YAML
// library (go.yaml.in/yaml/v3) reported as "line N: problem" (line 0: it
// gave none), or 0 when it cannot say. The library counts the lines of its
// scanner's errors from 1 but those of its parser's from 0 (decode.go,
// parser.fail: it adds 1 for scanner errors only), and leaves the line out
// where the count is 0; so a parser error's line is one more than it
// says, and one it gives no line is on line 1, as is a scanner error's
// without one. The line is the start of the construct the library was
// reading (a flow sequence left open, a block mapping, a quoted scalar)
// where that is after line 1, else the one where it found the problem.
func syntaxLine(line int, problem string) int {
	switch {
	case slices.Contains(yamlParserProblems, problem):
		return line + 1
	case line > 0:
		return line
	case slices.Contains(yamlScannerProblems, problem):
		return 1
	}
	return 0
}

// yamlParserProblems are the problems the library's parser reports
// (parserc.go); yamlScannerProblems those of its scanner that can arise
// without a line (scannerc.go, yaml_parser_set_scanner_error).
var (
	yamlParserProblems = []string{
		"did not find expected <stream-start>", "did not find expected <document start>",
		"did not find expected node content", "did not find expected '-' indicator",
		"did not find expected key", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"found undefined tag handle", "found duplicate %YAML directive", "found incompatible YAML document",
		"found duplicate %TAG directive",
	}
	yamlScannerProblems = []string{
		"found character that cannot start any token", "mapping values are not allowed in this context",
		"mapping keys are not allowed in this context", "block sequence entries are not allowed in this context",
		"could not find expected ':'", "found unexpected end of stream", "found unknown escape character",
		"found a tab character that violates indentation", "found a tab character where an indentation space is expected",
		"found unexpected document indicator", "did not find expected comment or line break",
		"did not find expected whitespace or line break", "did not find expected alphabetic or numeric character",
		"found an indentation indicator equal to 0", "did not find expected hexdecimal number",
		"found invalid Unicode character escape code",
	}
)

// readerProblem reports whether msg is one of the library's reader errors
// (an invalid byte or character), which carry no line.
func readerProblem(msg string) bool {
	return strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16") ||
		msg == "control characters are not allowed" || msg == "invalid Unicode character"
}

// badCharAt finds the first byte of data that YAML does not allow: one
// that is not valid UTF-8, or a control character other than tab, line
// feed and carriage return (YAML 1.2, 5.1: the printable set). It returns
// its line and column (in characters), counted from 1.
func badCharAt(data []byte) (line, col int, ok bool) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1,
			r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r >= 0x7f && r <= 0x9f && r != 0x85,
			r == 0xfffe || r == 0xffff:
			return line, col, true
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return 0, 0, false
}

// duplicateKeys reports the first key that appears twice in one mapping
// anywhere under n.
func duplicateKeys(file string, n *yaml.Node) error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				continue
			}
			if f, ok := first[k.Value]; ok {
				return errAt(file, k, "duplicate key %q (first given at line %d:%d)", k.Value, f.Line, f.Column)
			}
			first[k.Value] = k
		}
	}
	if n.Kind == yaml.AliasNode {
		return nil // the anchor's own mapping is checked where it is defined
	}
	for _, c := range n.Content {
		if err := duplicateKeys(file, c); err != nil {
			return err
		}
	}
	return nil
}

// decodeError translates the error of decoding frag (v marshalled on its
// own, so its line numbers count from v) into out: the first problem, at
// its position in the original document, in the file's terms.
func decodeError(file string, v *yaml.Node, frag []byte, out any, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	at := v
	path := ""
	if m := fragLineRE.FindStringSubmatch(msg); m != nil {
		msg = strings.TrimSpace(msg[len(m[0]):])
		line, _ := strconv.Atoi(m[1])
		if n, p := nodeAtFragmentLine(v, frag, line, matcher(msg)); n != nil {
			at, path = n, p
		}
	}
	msg = plainMessage(msg, v, frag, out)
	if path != "" && !strings.HasPrefix(msg, "unknown key") && !strings.HasPrefix(msg, "duplicate key") {
		msg = path + ": " + msg
	}
	return &posError{file: file, line: at.Line, col: at.Column, msg: msg}
}

var fragLineRE = regexp.MustCompile(`^line (\d+):`)

// matcher returns which node a library message is about: the value of the
// tag (and text) it names, or the key it names.
func matcher(msg string) func(*yaml.Node) bool {
	if m := unmarshalRE.FindStringSubmatch(msg); m != nil {
		tag, val := m[1], m[2]
		return func(n *yaml.Node) bool {
			if n.ShortTag() != tag {
				return false
			}
			if short, ok := strings.CutSuffix(val, "..."); ok {
				return strings.HasPrefix(n.Value, short)
			}
			return val == "" || n.Value == val
		}
	}
	key := ""
	if m := notFoundRE.FindStringSubmatch(msg); m != nil {
		key = m[1]
	} else if m := alreadyRE.FindStringSubmatch(msg); m != nil {
		key = m[1]
	}
	return func(n *yaml.Node) bool { return key == "" || (n.Kind == yaml.ScalarNode && n.Value == key) }
}

// nodeAtFragmentLine finds the node of v that the fragment's line refers
// to: frag is parsed again and walked side by side with v (the two trees
// have the same shape), and the first fragment node on that line that
// match accepts gives the original node, with its key path
// ("nics.roce.mtu").
func nodeAtFragmentLine(v *yaml.Node, frag []byte, line int, match func(*yaml.Node) bool) (*yaml.Node, string) {
	var doc yaml.Node
	if yaml.Unmarshal(frag, &doc) != nil || len(doc.Content) == 0 {
		return nil, ""
	}
	var found *yaml.Node
	var foundPath string
	var walk func(f, o *yaml.Node, path string)
	walk = func(f, o *yaml.Node, path string) {
		if found != nil || f == nil || o == nil {
			return
		}
		if f.Line == line && match(f) {
			found, foundPath = o, path
			return
		}
		if len(f.Content) != len(o.Content) {
			return
		}
		for i := range f.Content {
			p := path
			switch {
			case f.Kind == yaml.MappingNode && i%2 == 1:
				p = joinPath(path, f.Content[i-1].Value)
			case f.Kind == yaml.MappingNode:
				p = joinPath(path, f.Content[i].Value)
			case f.Kind == yaml.SequenceNode:
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			walk(f.Content[i], o.Content[i], p)
		}
	}
	walk(doc.Content[0], v, "")
	return found, foundPath
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	unmarshalRE = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
	notFoundRE  = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	alreadyRE   = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// plainMessage rewrites one of the library's messages without Go type
// names.
func plainMessage(msg string, v *yaml.Node, frag []byte, out any) string {
	if m := unmarshalRE.FindStringSubmatch(msg); m != nil {
		got := TagWords(m[1])
		if m[2] != "" {
			got += fmt.Sprintf(" %q", m[2])
		}
		return fmt.Sprintf("want %s, got %s", TypeWords(m[3], out), got)
	}
	if m := notFoundRE.FindStringSubmatch(msg); m != nil {
		if keys := knownKeys(m[2], out); len(keys) > 0 {
			return fmt.Sprintf("unknown key %q (known: %s)", m[1], strings.Join(keys, ", "))
		}
		return fmt.Sprintf("unknown key %q", m[1])
	}
	if m := alreadyRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[2])
		if n, _ := nodeAtFragmentLine(v, frag, line, matcher(msg)); n != nil {
			return fmt.Sprintf("duplicate key %q (first given at line %d:%d)", m[1], n.Line, n.Column)
		}
		return fmt.Sprintf("duplicate key %q", m[1])
	}
	return msg
}

// TagWords names a YAML tag (!!seq, !!map, ...) the way a file reads
// ("a list", "a mapping"); the command line words its YAML errors with it too.
func TagWords(tag string) string {
	switch tag {
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	case "!!str":
		return "text"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "true/false"
	case "!!null":
		return "nothing"
	case "!!binary":
		return "binary data"
	case "!!timestamp":
		return "a date"
	}
	return "a " + strings.TrimPrefix(tag, "!!")
}

// TypeWords names the Go type (as the YAML decoder prints it, "[]string",
// "*model.NICSpec") a value is decoded into as the kind of YAML value it
// wants ("a list", "an integer"); out, when not nil, is the document's
// target, in which a named type is looked up. Without it a named type is a
// mapping (the structs of the cluster schema). The command line words the
// decoder's errors with it too.
func TypeWords(goType string, out any) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a mapping"
	}
	goType = strings.TrimPrefix(goType, "*")
	switch goType {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "text"
	}
	if out == nil {
		return "a mapping"
	}
	if t := findType(reflect.TypeOf(out), goType, map[reflect.Type]bool{}); t != nil {
		switch t.Kind() {
		case reflect.Struct, reflect.Map:
			return "a mapping"
		case reflect.Slice, reflect.Array:
			return "a list"
		case reflect.String:
			return "text"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return "an integer"
		case reflect.Float32, reflect.Float64:
			return "a number"
		case reflect.Bool:
			return "true or false"
		}
	}
	return "a value of another kind"
}

// knownKeys lists the YAML keys of the struct type named goType reachable
// from out.
func knownKeys(goType string, out any) []string {
	t := findType(reflect.TypeOf(out), goType, map[reflect.Type]bool{})
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, name)
	}
	return keys
}

// findType returns the type named name (as reflect prints it) among t and
// the types of its fields, elements and pointers.
func findType(t reflect.Type, name string, seen map[reflect.Type]bool) reflect.Type {
	if t == nil || seen[t] {
		return nil
	}
	seen[t] = true
	if t.String() == name {
		return t
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return findType(t.Elem(), name, seen)
	case reflect.Map:
		if r := findType(t.Key(), name, seen); r != nil {
			return r
		}
		return findType(t.Elem(), name, seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if r := findType(t.Field(i).Type, name, seen); r != nil {
				return r
			}
		}
	}
	return nil
}

// nodeWords names the kind of a YAML node the way the file reads ("a
// list"), for errors that want another kind.
func nodeWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return TagWords(n.ShortTag())
}
