package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// parseYAML parses a YAML file of one document into a node tree (what
// names the file in errors: "cluster file"): a syntax error names
// file:line (the library reports no column); a second document is an
// error naming its line (the library would read the first and drop the
// rest); a key given twice in any mapping, at any depth, is an error naming
// both places (the library keeps the last one silently when building
// nodes); a key that is not text is an error. Aliases (*name) are resolved
// to what their anchor (&name) holds, so that every reader sees values,
// never alias nodes.
func parseYAML(file, what string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode}, nil // empty: no content
		}
		return nil, syntaxError(file, data, err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(file, data, err)
		}
		if !emptyDocument(&next) {
			return nil, errAt(file, &next, "a %s holds one document; a second starts at line %d", what, next.Line)
		}
	}
	if err := duplicateKeys(file, &doc); err != nil {
		return nil, err
	}
	if err := resolveAliases(file, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// emptyDocument reports whether doc holds nothing: a "---" with only
// comments after it, which leaves nothing to ignore.
func emptyDocument(doc *yaml.Node) bool {
	for _, c := range doc.Content {
		if c.Kind != yaml.ScalarNode || c.ShortTag() != "!!null" || c.Value != "" {
			return false
		}
	}
	return true
}

// maxAliasNodes bounds the values that aliases may add to a document, so
// that a few nested aliases cannot make it explode ("billion laughs").
const maxAliasNodes = 100000

// resolveAliases replaces every alias (*name) in the tree under doc by the
// node its anchor names, as a copy placed where the alias is written (a
// list or mapping shares its contents with the anchor's, whose own
// positions stay), and clears the anchors. A mapping key that is not text
// is an error.
func resolveAliases(file string, doc *yaml.Node) error {
	// Count the values the aliases add before changing anything; an alias
	// inside the value its anchor names would make it endless.
	size := map[*yaml.Node]int{}
	var cycle *yaml.Node
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			if s := size[n.Alias]; s < 0 && cycle == nil {
				cycle = n
			}
			n = n.Alias
		}
		if s, ok := size[n]; ok {
			return max(s, 0)
		}
		size[n] = -1 // being counted
		s := 1
		for _, c := range n.Content {
			if s += count(c); s > 2*maxAliasNodes {
				s = 2 * maxAliasNodes
				break
			}
		}
		size[n] = s
		return s
	}
	plain := 0
	var countPlain func(n *yaml.Node)
	countPlain = func(n *yaml.Node) {
		plain++
		for _, c := range n.Content {
			countPlain(c)
		}
	}
	countPlain(doc)
	extra := count(doc) - plain
	if cycle != nil {
		return errAt(file, cycle, "alias *%s is inside the value it names", cycle.Value)
	}
	if extra > maxAliasNodes {
		return fmt.Errorf("%s: aliases (*name) expand the document by more than %d values", file, maxAliasNodes)
	}
	// The tree as parsed has aliases only as leaves: each node is visited
	// once, and a copy is not visited (its contents are the anchor's,
	// resolved where the anchor is).
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		n.Anchor = ""
		for i, c := range n.Content {
			if c.Kind == yaml.AliasNode {
				if c.Alias == nil {
					return errAt(file, c, "alias *%s names no anchor", c.Value)
				}
				cp := *c.Alias
				cp.Line, cp.Column, cp.Anchor = c.Line, c.Column, ""
				cp.HeadComment, cp.LineComment, cp.FootComment = c.HeadComment, c.LineComment, c.FootComment
				n.Content[i] = &cp
			} else if err := walk(c); err != nil {
				return err
			}
			if n.Kind == yaml.MappingNode && i%2 == 0 && n.Content[i].Kind != yaml.ScalarNode {
				return errAt(file, n.Content[i], "a key must be text, got %s", nodeWords(n.Content[i]))
			}
		}
		return nil
	}
	return walk(doc)
}

// gotWords says what a value is, for "want X, got Y": a scalar's text,
// quoted, or the kind of a list or mapping.
func gotWords(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return nodeWords(n)
}

// scalarText returns the text of the value of key, refusing a list or a
// mapping.
func scalarText(file string, v *yaml.Node, key string) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", errAt(file, v, "%s: want text (a scalar), got %s", key, nodeWords(v))
	}
	return v.Value, nil
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
	if m := arrayRE.FindStringSubmatch(msg); m != nil {
		// The library stops at a list of the wrong length for a
		// fixed-size array without saying where: find it by the types.
		if n, p := arrayMismatch(v, reflect.TypeOf(out), ""); n != nil {
			at, path = n, p
		}
		msg = fmt.Sprintf("want a list of %s elements, got %s", m[1], m[2])
	}
	msg = plainMessage(msg, v, frag, out)
	if path != "" && !strings.HasPrefix(msg, "unknown key") && !strings.HasPrefix(msg, "duplicate key") {
		msg = path + ": " + msg
	}
	return &posError{file: file, line: at.Line, col: at.Column, msg: msg}
}

var (
	fragLineRE = regexp.MustCompile(`^line (\d+):`)
	arrayRE    = regexp.MustCompile(`^invalid array: want (\d+) elements but got (\d+)$`)
)

// arrayMismatch finds, in document order, the first list under n that is
// decoded into a fixed-size array (of type t, as n is) of another length,
// with its key path ("nvlink.pairs[0]").
func arrayMismatch(n *yaml.Node, t reflect.Type, path string) (*yaml.Node, string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == nil {
		return nil, ""
	}
	elems := func(elem reflect.Type) (*yaml.Node, string) {
		for i, c := range n.Content {
			if f, p := arrayMismatch(c, elem, fmt.Sprintf("%s[%d]", path, i)); f != nil {
				return f, p
			}
		}
		return nil, ""
	}
	switch {
	case t.Kind() == reflect.Array && n.Kind == yaml.SequenceNode:
		if len(n.Content) != t.Len() {
			return n, path
		}
		return elems(t.Elem())
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		return elems(t.Elem())
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, p := arrayMismatch(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value)); f != nil {
				return f, p
			}
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft := yamlField(t, n.Content[i].Value); ft != nil {
				if f, p := arrayMismatch(n.Content[i+1], ft, joinPath(path, n.Content[i].Value)); f != nil {
					return f, p
				}
			}
		}
	}
	return nil, ""
}

// yamlField returns the type of the field of struct t that YAML key name
// decodes into (inline structs included), or nil.
func yamlField(t reflect.Type, name string) reflect.Type {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if r := yamlField(ft, name); r != nil {
					return r
				}
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		if tag == name {
			return f.Type
		}
	}
	return nil
}

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
