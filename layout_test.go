package collsim_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of this module (go.mod).
const module = "github.com/collsim/collsim"

// imports returns, for every package directory of the module (relative
// path, "." for the root), the import paths its non-test Go files name.
// Files are read whatever their build constraints, so the graph is the
// union over platforms: a rule holds for every build.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		for _, s := range f.Imports {
			ip, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			out[dir] = append(out[dir], ip)
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// local returns the module-relative directory of a module import path;
// ok is false for imports from outside the module.
func local(ip string) (string, bool) {
	if ip == module {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(ip, module+"/"); ok {
		return rest, true
	}
	return "", false
}

// deps returns the module packages pkg needs, directly or not, sorted.
func deps(graph map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, ip := range graph[p] {
			if d, ok := local(ip); ok && !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// TestLayout enforces the import direction of the README's Layout section:
// model needs nothing of collsim; ingest and sim need only model;
// calibrate never needs scenarios (the corpus harness that does is
// calibrate/accuracy); study needs only sim and scenarios (and model); and
// only internal/cli imports the command-line library.
func TestLayout(t *testing.T) {
	graph := imports(t)
	for _, pkg := range []string{"model", "ingest", "sim", "calibrate", "study", "internal/cli"} {
		if _, ok := graph[pkg]; !ok {
			t.Fatalf("no package %s: run the test from the module root", pkg)
		}
	}
	only := func(pkg string, allowed ...string) {
		for _, d := range deps(graph, pkg) {
			if !slices.Contains(allowed, d) {
				t.Errorf("%s imports %s/%s; it may import only %v of collsim", pkg, module, d, allowed)
			}
		}
	}
	only("model")
	only("ingest", "model")
	only("sim", "model")
	only("study", "model", "sim", "scenarios")
	if slices.Contains(deps(graph, "calibrate"), "scenarios") {
		t.Errorf("calibrate imports scenarios (directly or not): %v", deps(graph, "calibrate"))
	}
	for pkg, ips := range graph {
		for _, ip := range ips {
			if strings.HasPrefix(ip, "github.com/urfave/cli") && pkg != "internal/cli" {
				t.Errorf("%s imports %s; only internal/cli may", pkg, ip)
			}
		}
	}
}

// TestLayoutSeesImports: the walk finds the module's packages and their
// imports, so the rules above have something to check.
func TestLayoutSeesImports(t *testing.T) {
	graph := imports(t)
	if got := deps(graph, "calibrate"); !slices.Contains(got, "ingest") || !slices.Contains(got, "model") {
		t.Errorf("calibrate's module imports %v lack ingest and model", got)
	}
	if got := deps(graph, "cmd/collsim"); !slices.Contains(got, "internal/cli") {
		t.Errorf("cmd/collsim's module imports %v lack internal/cli", got)
	}
}
