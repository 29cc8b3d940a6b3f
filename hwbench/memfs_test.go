package hwbench

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
)

// memTree is a small tree with relative, absolute, chained and dangling
// links, files and implied directories.
func memTree() map[string]memEntry {
	return map[string]memEntry{
		"sys/devices/pci0/0000:01:00.0/numa_node":        {data: []byte("1\n")},
		"sys/devices/pci0/0000:01:00.0/infiniband/ib0/x": {data: []byte("fw")},
		"sys/bus/pci/devices/0000:01:00.0":               {data: []byte("../../../devices/pci0/0000:01:00.0"), link: true},
		"sys/class/infiniband/ib0":                       {data: []byte("/sys/devices/pci0/0000:01:00.0/infiniband/ib0"), link: true},
		"sys/class/net/chain":                            {data: []byte("../../bus/pci/devices/0000:01:00.0"), link: true},
		"sys/class/net/dangling":                         {data: []byte("../nowhere"), link: true},
		"proc/cpuinfo":                                   {data: []byte("vendor_id\t: GenuineIntel\n")},
	}
}

// mapFS is the standard library's reference map file system holding the
// same entries.
func mapFS(files map[string]memEntry) fstest.MapFS {
	ref := fstest.MapFS{}
	for name, e := range files {
		f := &fstest.MapFile{Data: e.data}
		if e.link {
			f.Mode = fs.ModeSymlink
		}
		ref[name] = f
	}
	return ref
}

// sameAs checks that m answers ReadFile, ReadLink, Stat and ReadDir on
// name as ref does.
func sameAs(t *testing.T, m *memFS, ref fs.FS, name string) {
	t.Helper()
	gb, gerr := fs.ReadFile(m, name)
	wb, werr := fs.ReadFile(ref, name)
	if string(gb) != string(wb) || (gerr == nil) != (werr == nil) {
		t.Errorf("ReadFile(%q) = %q, %v; want %q, %v", name, gb, gerr, wb, werr)
	}
	gl, gerr := fs.ReadLink(m, name)
	wl, werr := fs.ReadLink(ref, name)
	if gl != wl || (gerr == nil) != (werr == nil) {
		t.Errorf("ReadLink(%q) = %q, %v; want %q, %v", name, gl, gerr, wl, werr)
	}
	gs, gerr := fs.Stat(m, name)
	ws, werr := fs.Stat(ref, name)
	if (gerr == nil) != (werr == nil) || gerr == nil && (gs.IsDir() != ws.IsDir() || gs.Size() != ws.Size()) {
		t.Errorf("Stat(%q) = %v, %v; want %v, %v", name, gs, gerr, ws, werr)
	}
	names := func(fsys fs.FS) ([]string, error) {
		es, err := fs.ReadDir(fsys, name)
		var out []string
		for _, e := range es {
			out = append(out, e.Name()+" "+e.Type().String())
		}
		return out, err
	}
	got, gerr := names(m)
	want, werr := names(ref)
	if !slices.Equal(got, want) || (gerr == nil) != (werr == nil) {
		t.Errorf("ReadDir(%q) = %q, %v; want %q, %v", name, got, gerr, want, werr)
	}
}

// TestMemFS: the Fake's file tree behaves as the standard library's
// reference map file system does on the same entries.
func TestMemFS(t *testing.T) {
	m, ref := newMemFS(memTree()), mapFS(memTree())
	for _, name := range []string{
		".", "proc/cpuinfo", "sys/bus/pci/devices/0000:01:00.0/numa_node", "sys/bus/pci/devices/0000:01:00.0",
		"sys/class/infiniband", "sys/class/infiniband/ib0", "sys/class/infiniband/ib0/x", "sys/class/net", "sys/class/net/chain/infiniband/ib0/x",
		"sys/class/net/dangling", "sys/devices/pci0", "sys/missing", "proc/cpuinfo/x", "/proc/cpuinfo",
	} {
		sameAs(t, m, ref, name)
	}
	if _, err := fs.ReadFile(newMemFS(map[string]memEntry{"a": {data: []byte("b"), link: true}, "b": {data: []byte("a"), link: true}}), "a"); err == nil {
		t.Error("a link loop was read")
	}
	// The conformance checks, on the tree without the links that lead
	// nowhere.
	tree := memTree()
	delete(tree, "sys/class/net/dangling")
	delete(tree, "sys/class/infiniband/ib0")
	if err := fstest.TestFS(newMemFS(tree), "proc/cpuinfo", "sys/devices/pci0/0000:01:00.0/infiniband/ib0/x"); err != nil {
		t.Error(err)
	}
}

// TestFakeFilesFS: every file, link and directory of the Fake's /sys and
// /proc reads as it would from the reference map file system.
func TestFakeFilesFS(t *testing.T) {
	m := NewFake(FakeConfig{GPUs: 8, NICs: 4}).files
	ref := mapFS(m.files)
	for name := range m.files {
		sameAs(t, m, ref, name)
	}
	for name := range m.dirs {
		sameAs(t, m, ref, name)
	}
}
